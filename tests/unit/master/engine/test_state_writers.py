"""Inside the master only ``_transitions`` writes a trial's or an experiment's state (it applies
the ``_lifecycle`` machines); the searcher driver only flags trials."""

from __future__ import annotations

import ast
from pathlib import Path

import trialkit.master

MASTER = Path(trialkit.master.__file__).parent
WRITER = "engine/_transitions.py"
#: api/_experiments.py creates experiments (ACTIVE or PAUSED); one whose search cannot even be
#: loaded is failed by ``_transitions`` like any other. No trial state is written there.
CREATES = {"api/_experiments.py": {"create_experiment"}}
#: A local-mode run (no master ran it) ends as it says: the ingest stores that end, COMPLETED or
#: ERROR, on its unmanaged experiment and trial, which no lifecycle machine drives.
CREATES["ingest/_local_runs.py"] = {"update_trial", "update_experiment"}


def _state_writes(tree: ast.AST) -> list[tuple[str, int]]:
    """Store calls given a ``state=`` keyword (but listings, which filter by it), and
    ``x["state"] = ...`` assignments."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr.startswith("list_"):
                continue  # a read: list_checkpoints(state=DELETING)
            if any(k.arg == "state" for k in node.keywords):
                found.append((node.func.attr, node.lineno))
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.slice, ast.Constant)
                    and target.slice.value == "state"
                    and not (isinstance(target.value, ast.Name) and target.value.id == "scope")
                ):  # an ASGI scope's "state" is no lifecycle state
                    found.append(("['state']", node.lineno))
    return found


def test_only_transitions_write_trial_and_experiment_state() -> None:
    offenders = []
    writers = set()
    for path in sorted(MASTER.rglob("*.py")):
        module = path.relative_to(MASTER).as_posix()
        writes = _state_writes(ast.parse(path.read_text()))
        allowed = CREATES.get(module, set())
        if module == WRITER:
            writers.update(name for name, _ in writes)
            continue
        offenders += [f"{module}:{line} {name}" for name, line in writes if name not in allowed]
    assert offenders == []
    assert writers  # the check itself finds the writer's own writes
