"""A custom searcher's own process: ``python -m trialkit.master.search._custom_child MODEL_DIR``.

The master starts one per experiment whose ``searcher.custom_searcher_class`` names a user class
(``_custom_process``), so user code never runs in the master: a crash, a hang or an exception
there ends this process or this request, and the master fails that one experiment.

Protocol, one JSON object a line: the first request is ``{"start": {spec, kwargs, seed, metric,
state}}``, the others ``{"call": handler, "args": [...]}``; every answer is ``{"ops": [...],
"state": ..., "progress": ...}`` (the operations encoded as in the REST API, the state the
master saves) or ``{"error": message}``. Stdin at EOF ends the process (the master is gone or
done with the search). User code printing to stdout writes to stderr: stdout carries answers.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from ... import _alias
from ...searcher import (
    CustomMethod,
    ExitedReason,
    SearcherError,
    SearchMethod,
    encode_operation,
)

#: the handlers the master may call, and how each JSON argument list is turned back into Python
_HANDLERS = {
    "initial_operations": lambda args: (),
    "on_trial_created": lambda args: (str(args[0]),),
    "on_validation_completed": lambda args: (str(args[0]), args[1], args[2]),
    "on_trial_progress": lambda args: (str(args[0]), float(args[1])),
    "on_trial_exited_early": lambda args: (str(args[0]), ExitedReason(args[1])),
    "on_trial_closed": lambda args: (str(args[0]),),
}


def _load_class(root: Path, spec: str) -> Any:
    """Import ``module:Class`` from the unpacked model directory ``root``."""
    module_name, _, attr = spec.partition(":")
    path = root.joinpath(*module_name.split(".")).with_suffix(".py")
    if not path.exists():
        raise SearcherError(
            f"searcher.custom_searcher_class: {spec}: no file {path.relative_to(root)} in the"
            " model directory"
        )
    sys.path.insert(0, str(root))
    _alias.install()  # searchers written for Determined import ``determined.searcher``
    try:
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        module_spec.loader.exec_module(module)
    except Exception as e:
        raise SearcherError(
            f"searcher.custom_searcher_class: importing {path.name} raised {type(e).__name__}: {e}"
        ) from e
    try:
        return getattr(module, attr)
    except AttributeError:
        raise SearcherError(
            f"searcher.custom_searcher_class: {module_name} has no attribute {attr!r}"
        ) from None


def _start(root: Path, start: Mapping[str, Any]) -> CustomMethod:
    """Build the user's method (restored from ``state`` when the master saved one)."""
    spec = str(start["spec"])
    try:
        user = _load_class(root, spec)(**start["kwargs"])
    except SearcherError:
        raise
    except Exception as e:
        raise SearcherError(
            f"searcher.custom_searcher_class: {spec}(...) raised {type(e).__name__}: {e}"
        ) from e
    if not isinstance(user, SearchMethod):
        raise SearcherError(
            f"searcher.custom_searcher_class: {spec} is not a trialkit.searcher.SearchMethod"
        )
    method = CustomMethod(user, int(start["seed"]), str(start["metric"]))
    if start.get("state") is not None:
        method.load(start["state"])
    return method


def _answer(method: CustomMethod, request: Mapping[str, Any]) -> dict[str, Any]:
    """Run one handler; its operations plus the state and progress the master keeps."""
    name = str(request.get("call"))
    if name not in _HANDLERS:
        raise SearcherError(f"custom searcher process: unknown request {request!r}")
    ops = getattr(method, name)(*_HANDLERS[name](request.get("args", [])))
    return {
        "ops": [encode_operation(op) for op in ops],
        "state": method.save(),
        "progress": method.progress(),
    }


def serve(root: Path, requests: IO[str], answers: IO[str]) -> None:
    """Answer requests until ``requests`` ends."""
    method: CustomMethod | None = None
    for line in requests:
        request = json.loads(line)
        try:
            if "start" in request:
                method = _start(root, request["start"])
                answer = {"ops": [], "state": method.save(), "progress": method.progress()}
            elif method is None:
                raise SearcherError("custom searcher process: a call before start")
            else:
                answer = _answer(method, request)
        except SearcherError as e:
            answer = {"error": str(e)}
        except Exception as e:  # e.g. save_method_state failing: the same one line
            answer = {"error": f"custom searcher: {type(e).__name__}: {e}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


def main() -> None:
    root = Path(sys.argv[1])
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # the user's print() must not mix with the answers
    sys.stdout = sys.stderr
    try:
        serve(root, sys.stdin, answers)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
