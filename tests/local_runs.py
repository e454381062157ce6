"""What a user sees of local-mode runs: the store once the master has ingested their journals."""

from __future__ import annotations

from pathlib import Path

from trialkit.master.ingest import LocalRunIngest
from trialkit.store import Store


def ingested_store(home: Path) -> Store:
    """The store of ``home`` after the master's ingest of every local run journaled there (as
    ``trialkit experiment list`` shows them once a master has started or ticked)."""
    store = Store.at(home)
    LocalRunIngest(store, home).ingest_all()
    return store
