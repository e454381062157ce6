"""The typed HTTP client of the master's REST API, shared by trial processes, the CLI and the
searcher runner: one method per route, returning that route's response model (``rest``).

The master records its address and token in a 0600 file; when a connection fails the client
re-reads that file, so a restarted master (on a new port) is found again without losing work.
A trial's client takes only the address from it and keeps its own per-trial token.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx

from .. import rest
from .._json import dumps
from ..errors import APIError, MasterUnavailable
from ..rest import routes

R = TypeVar("R")

_JSON_HEADERS = {"content-type": "application/json"}

# httpx logs every request at INFO, which would flood trial logs.
logging.getLogger("httpx").setLevel(logging.WARNING)


def read_master_file(path: str | os.PathLike[str]) -> tuple[str, str] | None:
    """(url, token) from a master file, or None when there is none."""
    try:
        d = json.loads(Path(path).read_text())
        return str(d["url"]), str(d["token"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def api_error(status: int, detail: Any) -> APIError:
    """The error for a refusal: one line per field error of a 422, else the detail."""
    if isinstance(detail, dict) and isinstance(detail.get("errors"), list):
        errors = [str(e) for e in detail["errors"]]
        return APIError(status, "\n".join(errors), errors)
    return APIError(status, str(detail))


class MasterClient:
    """Calls the master; reconnects through the master file when the master moved."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        master_file: str | None = None,
        timeout: float = 30.0,
        token_from_file: bool = True,
    ) -> None:
        self.url = url
        self.token = token
        self.master_file = master_file
        #: False for a trial: the master file's admin token is not for it, only its address.
        self.token_from_file = token_from_file
        self._timeout = timeout
        self._http = self._new_http()

    def _new_http(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=self._timeout,
            trust_env=False,
            # The master speaks plain HTTP on loopback: no TLS context to build (loading the CA
            # bundle slowed every CLI command: bench/README.md, cli-tls). An https URL still
            # verifies.
            verify=not self.url.startswith("http://"),
        )

    def close(self) -> None:
        self._http.close()

    def rediscover(self) -> None:
        """Follow the master file to where the master is now (a restarted master)."""
        if not self.master_file:
            return
        found = read_master_file(self.master_file)
        if found and not self.token_from_file:
            found = (found[0], self.token)
        if found and found != (self.url, self.token):
            self.url, self.token = found
            self._http.close()
            self._http = self._new_http()

    def _rediscover_token(self) -> bool:
        """Re-read the master file; True when it holds credentials other than ours."""
        before = (self.url, self.token)
        self.rediscover()
        return (self.url, self.token) != before

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: dict[str, Any] | None = None,
        retry_for: float = 0.0,
        timeout: float | None = None,
    ) -> Any:
        """Send a request; keep retrying connection failures and 503 answers (the master is
        there but cannot serve now) for ``retry_for`` seconds."""
        deadline = time.monotonic() + retry_for
        delay = 0.05
        while True:
            try:
                resp = self._http.request(
                    method,
                    path,
                    content=None if json_body is None else dumps(json_body).encode(),
                    headers=_JSON_HEADERS if json_body is not None else None,
                    params=params,
                    timeout=timeout if timeout is not None else self._timeout,
                )
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as e:
                self.rediscover()
                if time.monotonic() >= deadline:
                    raise MasterUnavailable(f"cannot reach the master at {self.url}: {e}") from e
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
                continue
            if resp.status_code == 401 and self._rediscover_token():
                continue  # a restarted master: same address, new token
            if resp.status_code == 503 and time.monotonic() < deadline:
                time.sleep(delay)  # e.g. its database restarting: the master asks to try again
                delay = min(delay * 2, 2.0)
                continue
            return self._decode(resp)

    @staticmethod
    def _decode(resp: httpx.Response) -> Any:
        if resp.status_code >= 400:
            try:
                detail = resp.json().get("detail", resp.text)
            except ValueError:
                detail = resp.text
            raise api_error(resp.status_code, detail)
        if not resp.content:
            return None
        return resp.json()

    # Typed routes ------------------------------------------------------------------------------

    def _call(
        self,
        model: type[R],
        method: str,
        template: str,
        *,
        body: Any = None,
        params: dict[str, Any] | None = None,
        retry_for: float = 0.0,
        timeout: float | None = None,
        **path_params: Any,
    ) -> R:
        """One request to the route ``template``, its answer read as ``model``."""
        data = self.request(
            method,
            routes.path(template, **path_params),
            json_body=body,
            params=params,
            retry_for=retry_for,
            timeout=timeout,
        )
        return rest.decode(model, data, f"{method} {template}")

    def master_info(self, *, timeout: float | None = None) -> rest.MasterInfo:
        return self._call(rest.MasterInfo, "GET", routes.MASTER, timeout=timeout)

    def shutdown(self) -> rest.Ok:
        return self._call(rest.Ok, "POST", routes.SHUTDOWN)

    # Experiments

    def create_experiment(
        self,
        config: Mapping[str, Any],
        *,
        model_def: str | None = None,
        activate: bool = True,
        python: str | None = None,
        warm_start_path: str | None = None,
    ) -> rest.CreatedExperiment:
        """Create an experiment; ``model_def`` is the packed model directory, base64."""
        body: dict[str, Any] = {"config": config, "activate": activate}
        for key, value in (
            ("model_def", model_def),
            ("python", python),
            ("warm_start_path", warm_start_path),
        ):
            if value is not None:
                body[key] = value
        return self._call(rest.CreatedExperiment, "POST", routes.EXPERIMENTS, body=body)

    def list_experiments(self, *, archived: bool = False) -> rest.ExperimentList:
        return self._call(rest.ExperimentList, "GET", routes.EXPERIMENTS, params={"all": archived})

    def describe_experiment(
        self, experiment_id: int, *, retry_for: float = 0.0
    ) -> rest.ExperimentDescription:
        return self._call(
            rest.ExperimentDescription,
            "GET",
            routes.EXPERIMENT,
            retry_for=retry_for,
            experiment_id=experiment_id,
        )

    def experiment_summary(
        self, experiment_id: int, *, retry_for: float = 0.0
    ) -> rest.ExperimentSummary:
        """Describe without the checkpoint list (what ``--follow`` polls)."""
        return self._call(
            rest.ExperimentSummary,
            "GET",
            routes.EXPERIMENT_SUMMARY,
            retry_for=retry_for,
            experiment_id=experiment_id,
        )

    def experiment_model_def(self, experiment_id: int) -> bytes:
        """The experiment's stored model directory as a .tar.gz archive (empty if none)."""
        reply = self._call(
            rest.ModelDef, "GET", routes.EXPERIMENT_MODEL_DEF, experiment_id=experiment_id
        )
        return base64.b64decode(reply.b64_tgz)

    def experiment_action(self, experiment_id: int, action: str) -> rest.ExperimentReply:
        """``action``: one of ``routes.EXPERIMENT_ACTIONS`` (pause, activate, kill, ...)."""
        if action not in routes.EXPERIMENT_ACTIONS:
            raise ValueError(f"no experiment action {action!r}: one of {routes.EXPERIMENT_ACTIONS}")
        return self._call(
            rest.ExperimentReply,
            "POST",
            routes.EXPERIMENT_ACTION,
            experiment_id=experiment_id,
            action=action,
        )

    def edit_experiment(
        self,
        experiment_id: int,
        *,
        description: str | None = None,
        labels: Sequence[str] | None = None,
    ) -> rest.ExperimentReply:
        """Set an experiment's description ("" clears it) and/or its labels (the whole list);
        a field left None is kept."""
        body: dict[str, Any] = {}
        if description is not None:
            body["description"] = description
        if labels is not None:
            body["labels"] = list(labels)
        return self._call(
            rest.ExperimentReply, "PATCH", routes.EXPERIMENT, body=body, experiment_id=experiment_id
        )

    def experiment_checkpoints(
        self, experiment_id: int, *, retry_for: float = 0.0
    ) -> rest.CheckpointList:
        return self._call(
            rest.CheckpointList,
            "GET",
            routes.EXPERIMENT_CHECKPOINTS,
            retry_for=retry_for,
            experiment_id=experiment_id,
        )

    def list_trials(self, experiment_id: int) -> rest.TrialList:
        return self._call(
            rest.TrialList, "GET", routes.EXPERIMENT_TRIALS, experiment_id=experiment_id
        )

    def best_validation(self, experiment_id: int, *, retry_for: float = 0.0) -> rest.BestValidation:
        return self._call(
            rest.BestValidation,
            "GET",
            routes.BEST_VALIDATION,
            retry_for=retry_for,
            experiment_id=experiment_id,
        )

    def searcher_events(
        self, experiment_id: int, *, after: int, timeout_seconds: float, retry_for: float = 0.0
    ) -> rest.SearcherEvents:
        """Long-poll a custom searcher's events after event ``after``."""
        return self._call(
            rest.SearcherEvents,
            "GET",
            routes.SEARCHER_EVENTS,
            params={"after": after, "timeout_seconds": timeout_seconds},
            timeout=timeout_seconds + 30,
            retry_for=retry_for,
            experiment_id=experiment_id,
        )

    def searcher_operations(
        self,
        experiment_id: int,
        operations: Sequence[Mapping[str, Any]],
        *,
        last_event_id: int,
        progress: float | None,
        retry_for: float = 0.0,
    ) -> rest.OperationsApplied:
        body = {
            "operations": list(operations),
            "last_event_id": last_event_id,
            "progress": progress,
        }
        return self._call(
            rest.OperationsApplied,
            "POST",
            routes.SEARCHER_OPERATIONS,
            body=body,
            retry_for=retry_for,
            experiment_id=experiment_id,
        )

    # Trials

    def describe_trial(self, trial_id: int) -> rest.TrialDescription:
        return self._call(rest.TrialDescription, "GET", routes.TRIAL, trial_id=trial_id)

    def trial_logs(
        self,
        trial_id: int,
        *,
        after_id: int = 0,
        limit: int | None = None,
        tail: int | None = None,
        retry_for: float = 0.0,
    ) -> rest.TrialLogs:
        """A page of log lines after ``after_id`` (``limit=0``: only the trial's state;
        ``tail``: from the start of the last ``tail`` lines); ``more`` says another follows."""
        params: dict[str, Any] = {"after_id": after_id}
        if limit is not None:
            params["limit"] = limit
        if tail is not None:
            params["tail"] = tail
        path = routes.path(routes.TRIAL_LOGS, trial_id=trial_id)
        data = self.request("GET", path, params=params, retry_for=retry_for)
        where = f"GET {routes.TRIAL_LOGS}"
        try:
            # The lines built directly: the generic decoder's checks cost more than the
            # transfer (bench/README.md: log-decoder), and a long log has hundreds of pages.
            lines = [rest.LogLineOut(**ln) for ln in data["logs"]]
        except (KeyError, TypeError):
            return rest.decode(rest.TrialLogs, data, where)  # it says what is wrong
        return dataclasses.replace(
            rest.decode(rest.TrialLogs, {**data, "logs": []}, where), logs=lines
        )

    def trial_metrics(
        self, trial_id: int, *, group: str | None = None, retry_for: float = 0.0
    ) -> rest.MetricList:
        return self._call(
            rest.MetricList,
            "GET",
            routes.TRIAL_METRICS,
            params={"group": group} if group is not None else None,
            retry_for=retry_for,
            trial_id=trial_id,
        )

    def trial_batch_metrics(self, trial_id: int) -> rest.BatchMetricsList:
        return self._call(
            rest.BatchMetricsList, "GET", routes.TRIAL_BATCH_METRICS, trial_id=trial_id
        )

    def report_metrics(
        self,
        trial_id: int,
        run_id: int,
        reports: Sequence[Mapping[str, Any]],
        *,
        sender: str | None = None,
        seq: int | None = None,
    ) -> rest.MetricsStored:
        """One attempt (the metrics shipper owns retries); with ``sender`` and ``seq`` the
        master stores the batch once, also when it is sent again."""
        body: dict[str, Any] = {"run_id": run_id, "reports": reports}
        if sender is not None:
            body.update(sender=sender, seq=seq)
        return self._call(
            rest.MetricsStored, "POST", routes.TRIAL_METRICS, body=body, trial_id=trial_id
        )

    def report_checkpoint(
        self, trial_id: int, run_id: int, record: Mapping[str, Any], *, retry_for: float = 0.0
    ) -> rest.CheckpointReply:
        return self._call(
            rest.CheckpointReply,
            "POST",
            routes.TRIAL_CHECKPOINTS,
            body={**record, "run_id": run_id},
            retry_for=retry_for,
            trial_id=trial_id,
        )

    def preemption(self, trial_id: int, run_id: int, *, timeout_seconds: float) -> rest.Preemption:
        """Long-poll whether the trial should stop (up to ``timeout_seconds``)."""
        return self._call(
            rest.Preemption,
            "GET",
            routes.PREEMPTION,
            params={"timeout_seconds": timeout_seconds, "run_id": run_id},
            timeout=timeout_seconds + 10,
            trial_id=trial_id,
        )

    def _trial_command(
        self, template: str, trial_id: int, body: dict[str, Any], retry_for: float
    ) -> rest.Ok:
        return self._call(
            rest.Ok, "POST", template, body=body, retry_for=retry_for, trial_id=trial_id
        )

    def ack_preemption(self, trial_id: int, run_id: int, *, retry_for: float = 0.0) -> rest.Ok:
        return self._trial_command(routes.ACK_PREEMPTION, trial_id, {"run_id": run_id}, retry_for)

    def searcher_operation(
        self, trial_id: int, *, retry_for: float = 0.0
    ) -> rest.SearcherOperation:
        return self._call(
            rest.SearcherOperation,
            "GET",
            routes.SEARCHER_OPERATION,
            retry_for=retry_for,
            trial_id=trial_id,
        )

    def complete_operation(
        self, trial_id: int, length: int, metric: Any, *, retry_for: float = 0.0
    ) -> rest.Ok:
        body = {"length": length, "metric": metric}
        return self._trial_command(routes.COMPLETED_OPERATION, trial_id, body, retry_for)

    def report_progress(
        self, trial_id: int, progress: float, *, is_raw: bool, retry_for: float = 0.0
    ) -> rest.Ok:
        body = {"progress": progress, "is_raw": is_raw}
        return self._trial_command(routes.PROGRESS, trial_id, body, retry_for)

    def set_status(self, trial_id: int, status: str, *, retry_for: float = 0.0) -> rest.Ok:
        return self._trial_command(routes.STATUS, trial_id, {"status": status}, retry_for)

    def report_early_exit(self, trial_id: int, reason: str, *, retry_for: float = 0.0) -> rest.Ok:
        return self._trial_command(routes.EARLY_EXIT, trial_id, {"reason": reason}, retry_for)

    def last_validation(self, trial_id: int, *, retry_for: float = 0.0) -> rest.LastValidation:
        return self._call(
            rest.LastValidation,
            "GET",
            routes.LAST_VALIDATION,
            retry_for=retry_for,
            trial_id=trial_id,
        )

    # Checkpoints

    def find_checkpoints(self, uuid_prefix: str) -> rest.UuidList:
        """The UUIDs of the checkpoints that start with ``uuid_prefix``."""
        return self._call(
            rest.UuidList, "GET", routes.CHECKPOINTS, params={"uuid_prefix": uuid_prefix}
        )

    def get_checkpoint(self, uuid: str, *, retry_for: float = 0.0) -> rest.CheckpointOut:
        return self._call(
            rest.CheckpointOut, "GET", routes.CHECKPOINT, retry_for=retry_for, uuid=uuid
        )

    def download_checkpoint_archive(self, uuid: str, dest: Path) -> None:
        """Write the checkpoint's files, as the master reads them from storage, to ``dest``
        (a tar.gz whose members are under ``<uuid>/``); APIError if the master cannot."""
        url = routes.path(routes.CHECKPOINT_ARCHIVE, uuid=uuid)
        try:
            with self._http.stream("GET", url, timeout=self._timeout) as resp:
                if resp.status_code >= 400:
                    resp.read()
                    raise APIError(resp.status_code, resp.text.strip())
                with open(dest, "wb") as out:
                    for chunk in resp.iter_bytes(1 << 20):
                        out.write(chunk)
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as e:
            raise MasterUnavailable(f"cannot reach the master at {self.url}: {e}") from e

    def delete_checkpoint(self, uuid: str, *, retry_for: float = 0.0) -> rest.Ok:
        return self._call(rest.Ok, "DELETE", routes.CHECKPOINT, retry_for=retry_for, uuid=uuid)

    # Checkpoint GC and deletion

    def experiment_gc(self, experiment_id: int) -> rest.CheckpointsDeleted:
        """Apply a finished experiment's checkpoint GC policy now."""
        return self._call(
            rest.CheckpointsDeleted, "POST", routes.EXPERIMENT_GC, experiment_id=experiment_id
        )

    def delete_experiment(self, experiment_id: int) -> rest.ExperimentDeleted:
        """Delete a finished experiment with its checkpoints' files and trial directories."""
        return self._call(
            rest.ExperimentDeleted, "POST", routes.EXPERIMENT_DELETE, experiment_id=experiment_id
        )

    def delete_checkpoints(self, uuids: Sequence[str]) -> rest.CheckpointsDeleted:
        """Delete checkpoints with their files (all or none; refused for a live trial's)."""
        return self._call(
            rest.CheckpointsDeleted,
            "POST",
            routes.CHECKPOINTS_DELETE,
            body={"uuids": list(uuids)},
        )

    def best_checkpoints(self, experiment_id: int, limit: int) -> rest.BestCheckpoints:
        """An experiment's ``limit`` best checkpoints by the searcher metric, best first."""
        return self._call(
            rest.BestCheckpoints,
            "GET",
            routes.BEST_CHECKPOINTS,
            params={"limit": limit},
            experiment_id=experiment_id,
        )

    # Web UI ------------------------------------------------------------------------------------

    def ui_login_code(self) -> rest.LoginCode:
        """A single-use login code for a browser (needs the admin token)."""
        return self._call(rest.LoginCode, "POST", routes.UI_LOGIN_CODE)

    def ui_revoke(self) -> rest.Ok:
        """End every web UI session and unused login code (needs the admin token)."""
        return self._call(rest.Ok, "POST", routes.UI_REVOKE)

    def ui_login_url(self, page: str = "") -> str:
        """A one-time login link to the web UI (``page``: a fragment such as ``experiments/3``)."""
        code = self.ui_login_code()
        url = f"{self.url}{code.login_path}?code={code.code}"
        return f"{url}#/{page}" if page else url
