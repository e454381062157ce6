"""The embedded master: REST API, scheduler and trial supervision on one machine.

``serve`` runs one in this process; clients find, start and stop one with ``trialkit.client``.

Subpackages, each one concern: ``api`` (the REST routes over the store and the engine), ``engine``
(trial and experiment state machines, scheduling, the periodic work), ``runs`` (trial processes:
the process table, the per-trial supervisor program, launch, log capture, local and Ray pools),
``search`` (experiment creation, warm start, the searcher driver), ``housekeeping`` (checkpoint
GC, the checkpoint journal) and ``ingest`` (group commit of metric reports, local-run journals)."""

from ._daemon import serve

__all__ = ["serve"]
