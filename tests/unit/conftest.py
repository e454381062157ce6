"""Fixtures of the unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from trialkit.store import Store


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A store on SQLite, and one on a real PostgreSQL server: a test taking ``store`` runs on
    both (a module defining its own ``store`` fixture overrides this one)."""
    if request.param == "sqlite":
        s = Store.at(tmp_path / "home")
    else:
        s = Store(request.getfixturevalue("postgres").new_database())
    try:
        yield s
    finally:
        s.close()
