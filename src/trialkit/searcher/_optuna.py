"""``searcher.name: optuna``: Optuna's samplers pick hyperparameters, its pruners stop trials.

Config keys: ``metric``, ``smaller_is_better``, ``max_trials``, ``max_concurrent_trials``,
``sampler`` (any class in ``optuna.samplers`` by name, default ``TPESampler``, seeded with the
experiment seed unless ``sampler_kwargs`` has a ``seed``), ``sampler_kwargs``, ``pruner`` (any class
in ``optuna.pruners``, default ``MedianPruner``; ``NopPruner`` never prunes), ``pruner_kwargs``,
and the length: ``max_length`` (0.37: the trial is asked to validate at L/8, L/4, L/2 and L, and
pruning is decided after each) or ``time_metric`` + ``max_time`` (0.38: every validation report is
given to the pruner at step ``time_metric``; a pruned trial gets a Stop).

One Optuna trial per trialkit trial (ask/tell). Trials are created like random search: up to
``max_concurrent_trials`` at a time, a new one each time one closes, until ``max_trials`` (an
InvalidHP trial does not count). The study lives in an Optuna ``JournalStorage`` whose log is kept
in the searcher state, with the pickled sampler (its RNG): a restarted master continues the study.
optuna is imported only when an experiment uses this searcher.
"""

from __future__ import annotations

import base64
import inspect
import math
import pickle
from collections.abc import Iterable, Mapping
from typing import Any

from trialkit.config import ConfigError, SearcherConfig
from trialkit.searcher._ops import (
    Close,
    ExitedReason,
    Operation,
    SearcherError,
    Stop,
    ValidateAfter,
)
from trialkit.searcher._random import initial_count
from trialkit.searcher._rungs import read_number
from trialkit.searcher._sampling import is_group
from trialkit.searcher._strategy import ProgressBook, Strategy, TrialSource, is_invalid

STUDY = "trialkit"
#: 0.37: the fractions of max_length at which an optuna trial validates (pruning points)
OPS_FRACTIONS = (8, 4, 2, 1)


def import_optuna() -> Any:
    """optuna, or a one-line error saying how to install it."""
    try:
        import optuna
    except ImportError:
        raise SearcherError(
            "searcher.name: optuna needs the optuna package: pip install optuna"
            " (or pip install 'trialkit[optuna]')"
        ) from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


class _MemoryJournal:
    """An Optuna journal backend that keeps its log in memory (saved in the searcher state)."""

    def __init__(self, logs: list[dict[str, Any]] | None = None) -> None:
        self.logs: list[dict[str, Any]] = list(logs or [])

    def read_logs(self, log_number_from: int) -> Iterable[dict[str, Any]]:
        return self.logs[log_number_from:]

    def append_logs(self, logs: list[dict[str, Any]]) -> None:
        self.logs.extend(logs)


def _flatten(space: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Leaves of the space by dotted name, in sorted order."""
    out: dict[str, Any] = {}
    for name in sorted(space):
        node, path = space[name], f"{prefix}{name}"
        if is_group(node):
            out.update(_flatten(node, path + "."))
        else:
            out[path] = node
    return out


def _set(tree: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    for p in parents:
        tree = tree.setdefault(p, {})
    tree[leaf] = value


def optuna_search_space(
    optuna: Any, space: Mapping[str, Any], fixed: dict[str, Any], errors: list[str]
) -> dict[str, Any]:
    """Optuna's distribution of each hyperparameter of ``space`` by dotted name (a categorical
    one samples its value's index); constants go to ``fixed``, with the categoricals' values
    under ``__categorical__``; what optuna cannot sample goes to ``errors``."""
    d = optuna.distributions
    out: dict[str, Any] = {}
    for path, leaf in _flatten(space).items():
        if not isinstance(leaf, Mapping) or leaf.get("type") == "const":
            fixed[path] = leaf.get("val") if isinstance(leaf, Mapping) else leaf
            continue
        kind = leaf["type"]
        if kind == "int":
            out[path] = d.IntDistribution(int(leaf["minval"]), int(leaf["maxval"]))
        elif kind == "double":
            out[path] = d.FloatDistribution(float(leaf["minval"]), float(leaf["maxval"]))
        elif kind == "log":
            base = float(leaf["base"])
            lo, hi = base ** float(leaf["minval"]), base ** float(leaf["maxval"])
            out[path] = d.FloatDistribution(lo, hi, log=True)
        elif kind == "categorical":
            out[path] = d.CategoricalDistribution(list(range(len(leaf["vals"]))))
            fixed.setdefault("__categorical__", {})[path] = list(leaf["vals"])
        else:
            errors.append(f"hyperparameters.{path}.type: {kind!r} is not supported by optuna")
    return out


class OptunaStrategy(Strategy):
    """ask/tell around an Optuna study; see the module docstring."""

    def __init__(
        self,
        searcher: SearcherConfig,
        hyperparameters: Mapping[str, Any],
        experiment_seed: int,
    ) -> None:
        self.optuna = import_optuna()
        errors: list[str] = []
        assert searcher.metric is not None and searcher.max_trials is not None  # required keys
        self.metric = searcher.metric
        self.smaller_is_better = searcher.smaller_is_better
        self.max_trials = searcher.max_trials
        self.max_concurrent = searcher.max_concurrent_trials
        self.length: int | None = searcher.max_length.value if searcher.max_length else None
        self.time_metric = searcher.time_metric
        self.max_time = searcher.max_time or 0
        self.targets = (
            sorted({max(self.length // f, 1) for f in OPS_FRACTIONS}) if self.length else []
        )
        self.sampler = self._build(
            "samplers", searcher.sampler, dict(searcher.sampler_kwargs), experiment_seed, errors,
            "sampler",
        )  # fmt: skip
        self.pruner = self._build(
            "pruners", searcher.pruner, dict(searcher.pruner_kwargs), None,
            errors, "pruner",
        )  # fmt: skip
        self.fixed: dict[str, Any] = {}
        self.distributions = optuna_search_space(self.optuna, hyperparameters, self.fixed, errors)
        if errors:
            raise ConfigError(errors)
        self.journal = _MemoryJournal()
        self.study = self._study(create=True)
        self.created_count = 0
        self.trial_ids: dict[str, int] = {}  # request id -> optuna trial id
        self.numbers: dict[str, int] = {}  # request id -> optuna trial number
        self.told: dict[str, str] = {}  # request id -> final optuna state
        self.last: dict[str, float] = {}  # request id -> last reported value
        self.target: dict[str, int] = {}  # 0.37: request id -> outstanding ValidateAfter
        self.step: dict[str, int] = {}  # request id -> last step reported to Optuna

    # -- construction ---------------------------------------------------------------------------

    def _build(
        self, module: str, name: str, kwargs: dict[str, Any], seed: int | None,
        errors: list[str], key: str,
    ) -> Any:  # fmt: skip
        cls = getattr(getattr(self.optuna, module), name, None)
        if not inspect.isclass(cls):
            errors.append(
                f"searcher.{key}: got {name!r}; expected a class in optuna.{module}"
                f" (e.g. {'TPESampler' if key == 'sampler' else 'MedianPruner'})"
            )
            return None
        if seed is not None and "seed" not in kwargs:
            if "seed" in inspect.signature(cls).parameters:
                kwargs["seed"] = seed
        try:
            return cls(**kwargs)
        except Exception as e:
            errors.append(f"searcher.{key}_kwargs: {name}({kwargs}) failed: {e}")
            return None

    def _study(self, create: bool) -> Any:
        storage = self.optuna.storages.JournalStorage(self.journal)  # type: ignore[arg-type]
        direction = "minimize" if self.smaller_is_better else "maximize"
        if create:
            return self.optuna.create_study(
                study_name=STUDY, storage=storage, sampler=self.sampler,
                pruner=self.pruner, direction=direction,
            )  # fmt: skip
        return self.optuna.load_study(
            study_name=STUDY, storage=storage, sampler=self.sampler, pruner=self.pruner
        )

    # -- events ---------------------------------------------------------------------------------

    def initial(self, trials: TrialSource) -> list[Operation]:
        ops: list[Operation] = []
        for _ in range(initial_count(self.max_trials, self.max_concurrent)):
            ops += self._new_trial(trials)
        return ops

    def _new_trial(self, trials: TrialSource) -> list[Operation]:
        self.created_count += 1
        try:
            trial = self.study.ask(self.distributions)
        except Exception as e:  # e.g. a sampler whose own dependency is missing
            name = type(self.sampler).__name__
            raise SearcherError(f"optuna {name}.ask failed: {type(e).__name__}: {e}") from e
        hparams: dict[str, Any] = {}
        categorical = self.fixed.get("__categorical__", {})
        for path, value in self.fixed.items():
            if path != "__categorical__":
                _set(hparams, path, value)
        for path, value in trial.params.items():
            _set(hparams, path, categorical[path][value] if path in categorical else value)
        create = trials.create(hparams)
        rid = create.request_id
        self.trial_ids[rid] = trial._trial_id
        self.numbers[rid] = trial.number
        if self.length is None:
            return [create]
        self.target[rid] = self.targets[0]
        return [create, ValidateAfter(rid, self.targets[0])]

    def _trial(self, rid: str) -> Any:
        return self.optuna.trial.Trial(self.study, self.trial_ids[rid])

    def validation(
        self, trials: TrialSource, request_id: str, metrics: Mapping[str, Any]
    ) -> list[Operation]:
        if request_id in self.told or request_id not in self.trial_ids:
            return []
        value = read_number(metrics, self.metric, request_id, "searcher metric", "optuna")
        if self.length is None:
            step = int(
                read_number(metrics, str(self.time_metric), request_id, "time metric", "optuna")
            )
        else:
            step = self.target.pop(request_id)
        trial = self._trial(request_id)
        if step > self.step.get(request_id, -1):  # Optuna keeps the first value of a step
            trial.report(value, step)
            self.step[request_id] = step
        self.last[request_id] = value
        if trial.should_prune():
            self._tell(request_id, "PRUNED")
            return [Stop(request_id)] if self.length is None else [Close(request_id)]
        if self.length is None:
            return []
        later = [t for t in self.targets if t > step]
        if not later:
            self._tell(request_id, "COMPLETE")
            return [Close(request_id)]
        self.target[request_id] = later[0]
        return [ValidateAfter(request_id, later[0])]

    def _tell(self, rid: str, state: str) -> None:
        if rid in self.told:
            return
        states = self.optuna.trial.TrialState
        value = self.last.get(rid)
        if state == "COMPLETE" and value is None:
            state = "FAIL"
        if state == "PRUNED":
            self.study.tell(self.numbers[rid], state=states.PRUNED)
        elif state == "COMPLETE":
            self.study.tell(self.numbers[rid], value)
        else:
            self.study.tell(self.numbers[rid], state=states.FAIL)
        self.told[rid] = state

    def exited_early(
        self, trials: TrialSource, request_id: str, reason: ExitedReason
    ) -> list[Operation]:
        self.target.pop(request_id, None)
        self._tell(request_id, "FAIL")
        if is_invalid(reason):
            self.created_count -= 1  # does not use up max_trials: replaced when it closes
        return []

    def closed(self, trials: TrialSource, request_id: str) -> list[Operation]:
        self.target.pop(request_id, None)
        self._tell(request_id, "COMPLETE")
        if self.created_count < self.max_trials:
            return self._new_trial(trials)
        return []

    def report_schedule(self, request_id: str) -> list[int]:
        """0.38 (for previews): report at the same fractions of max_time as 0.37 validates."""
        return sorted({max(self.max_time // f, 1) for f in OPS_FRACTIONS}) if self.max_time else []

    def progress(self, book: ProgressBook) -> float:
        # 0.38: reported fractions; 0.37: units ÷ max_length (as random search)
        return book.fraction(self.max_trials, float(self.length or 1))

    # -- state ----------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return {
            "journal": self.journal.logs,
            "sampler": base64.b64encode(pickle.dumps(self.sampler)).decode(),
            "created": self.created_count,
            "trial_ids": dict(self.trial_ids),
            "numbers": dict(self.numbers),
            "told": dict(self.told),
            "last": dict(self.last),
            "target": dict(self.target),
            "step": dict(self.step),
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        self.journal = _MemoryJournal([dict(x) for x in state["journal"]])
        self.sampler = pickle.loads(base64.b64decode(state["sampler"]))  # written by this master
        self.study = self._study(create=False)
        self.created_count = int(state["created"])
        self.trial_ids = {str(k): int(v) for k, v in state["trial_ids"].items()}
        self.numbers = {str(k): int(v) for k, v in state["numbers"].items()}
        self.told = {str(k): str(v) for k, v in state["told"].items()}
        self.last = {str(k): float(v) for k, v in state["last"].items() if math.isfinite(v)}
        self.target = {str(k): int(v) for k, v in state["target"].items()}
        self.step = {str(k): int(v) for k, v in state["step"].items()}
