"""Run a custom ``SearchMethod`` in your own process (Determined 0.37's ``LocalSearchRunner``).

``run(config, model_dir)`` creates the experiment (``searcher.name: custom``, no
``custom_searcher_class``) on the master, then polls ``GET /api/v1/experiments/{id}/searcher/
events``, calls the method for each event and posts the operations with ``POST .../searcher/
operations``, until the experiment ends. The runner's state (experiment id, SearcherState, the
method's own state) is saved in ``searcher_dir`` after every batch of events: run the same script
again after a crash and it continues the same experiment.
"""

from __future__ import annotations

import json
import logging
import math
import os
import pathlib
import uuid
from collections.abc import Mapping
from typing import Any

from trialkit.searcher import (
    ExitedReason,
    Operation,
    SearcherError,
    SearcherState,
    SearchMethod,
    check_operations,
    encode_operation,
)

logger = logging.getLogger("trialkit.searcher")

STATE_FILE = "state"
_TERMINAL = ("COMPLETED", "CANCELED", "ERROR")


class LocalSearchRunner:
    """Drive ``search_method`` from this process; state lives in ``searcher_dir``."""

    def __init__(
        self,
        search_method: SearchMethod,
        searcher_dir: str | os.PathLike[str] | None = None,
        *,
        client: Any = None,
        poll_seconds: float = 10.0,
    ) -> None:
        self.search_method = search_method
        self.searcher_dir = pathlib.Path(searcher_dir or pathlib.Path.cwd() / "searcher_dir")
        self.state = SearcherState()
        self._client = client
        self._poll = poll_seconds

    # -- public ---------------------------------------------------------------------------------

    def run(
        self,
        exp_config: Mapping[str, Any] | str | os.PathLike[str],
        model_dir: str | os.PathLike[str] | None = None,
    ) -> int:
        """Create the experiment (or resume the one in ``searcher_dir``), search, return its id."""
        client = self._get_client()
        experiment_id = self._load()
        if experiment_id is None:
            experiment_id = self._create(client, exp_config, model_dir)
            self._save(experiment_id)
            logger.info("custom searcher: created experiment %d", experiment_id)
        else:
            logger.info("custom searcher: resuming experiment %d", experiment_id)
        while True:
            resp = client.searcher_events(
                experiment_id,
                after=self.state.last_event_id,
                timeout_seconds=self._poll,
                retry_for=300,
            )
            events = resp.events
            self.state.trial_progress = {
                uuid.UUID(k): float(v) for k, v in resp.trial_progress.items()
            }
            if not events:
                if resp.experiment_state in _TERMINAL:
                    self.state.experiment_completed = True
                    self._save(experiment_id)
                    return experiment_id
                continue
            ops: list[Operation] = []
            for event in events:
                ops += self._handle(event)
            last = int(events[-1]["id"])
            client.searcher_operations(
                experiment_id,
                [encode_operation(op) for op in ops],
                last_event_id=last,
                progress=self._progress(),
                retry_for=300,
            )
            self.state.last_event_id = last
            self._save(experiment_id)

    # -- events ---------------------------------------------------------------------------------

    def _handle(self, event: Mapping[str, Any]) -> list[Operation]:
        kind = event["kind"]
        m, s = self.search_method, self.state
        if kind == "initial_operations":
            return check_operations(m.initial_operations(s), "initial_operations")
        rid = uuid.UUID(event["request_id"])
        if kind == "trial_created":
            s.trials_created.add(rid)
            return check_operations(m.on_trial_created(s, rid), "on_trial_created")
        if kind == "validation_completed":
            ops = m.on_validation_completed(s, rid, event["metric"], int(event["length"]))
            return check_operations(ops, "on_validation_completed")
        if kind == "trial_exited_early":
            s.failures.add(rid)
            ops = m.on_trial_exited_early(s, rid, ExitedReason(event["reason"]))
            return check_operations(ops, "on_trial_exited_early")
        if kind == "trial_closed":
            s.trials_closed.add(rid)
            return check_operations(m.on_trial_closed(s, rid), "on_trial_closed")
        raise SearcherError(f"unknown searcher event {event!r}")

    def _progress(self) -> float:
        """The search method's progress, held to [0, 1] (the master refuses anything else)."""
        try:
            progress = float(self.search_method.progress(self.state))
        except Exception:
            logger.exception("custom searcher progress() failed")
            return 0.0
        return min(max(progress, 0.0), 1.0) if math.isfinite(progress) else 0.0

    # -- state ----------------------------------------------------------------------------------

    def _load(self) -> int | None:
        path = self.searcher_dir / STATE_FILE
        if not path.exists():
            return None
        saved = json.loads(path.read_text())
        self.state.from_dict(saved["searcher_state"])
        self.search_method.load_method_state(self.searcher_dir / "method")
        return int(saved["experiment_id"])

    def _save(self, experiment_id: int) -> None:
        method_dir = self.searcher_dir / "method"
        method_dir.mkdir(parents=True, exist_ok=True)
        self.search_method.save_method_state(method_dir)
        tmp = self.searcher_dir / (STATE_FILE + ".tmp")
        tmp.write_text(
            json.dumps({"experiment_id": experiment_id, "searcher_state": self.state.to_dict()})
        )
        os.replace(tmp, self.searcher_dir / STATE_FILE)

    # -- master ---------------------------------------------------------------------------------

    def _get_client(self) -> Any:
        if self._client is None:
            from trialkit._home import trialkit_home
            from trialkit.client._discovery import client_for, start_background

            home = trialkit_home()
            self._client = client_for(home) or start_background(home)
        return self._client

    def _create(
        self,
        client: Any,
        exp_config: Mapping[str, Any] | str | os.PathLike[str],
        model_dir: str | os.PathLike[str] | None,
    ) -> int:
        import base64

        from trialkit._modeldir import pack
        from trialkit.config import load_config

        cfg = load_config(exp_config)
        if cfg.searcher.name != "custom" or cfg.searcher.custom_searcher_class:
            raise SearcherError(
                "LocalSearchRunner needs searcher.name: custom without custom_searcher_class"
                f" (got {cfg.searcher.name!r})"
            )
        model_def = None if model_dir is None else base64.b64encode(pack(model_dir)).decode()
        return client.create_experiment(cfg.as_dict(), model_def=model_def).experiment.id
