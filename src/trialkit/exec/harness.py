"""Run a legacy ``entrypoint: model_def:MyTrial`` experiment: import the Trial class from the
model directory and drive it with the harness Trainer under the master's searcher.

Usage (the master does this): ``python -m trialkit.exec.harness model_def:MyTrial``.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

import trialkit
from trialkit.errors import HarnessError

logger = logging.getLogger("trialkit.exec")


#: Frameworks a Trial class may need, with the extra that installs each.
_FRAMEWORK_EXTRAS = {
    "torch": "trialkit[pytorch]",
    "deepspeed": "deepspeed",
    "horovod": "horovod",
    "tensorflow": "tensorflow-cpu",
    "keras": "keras",
}


def _missing_module(spec: str, e: ModuleNotFoundError) -> HarnessError:
    """One line for a module that is not installed for this interpreter."""
    top = (e.name or "").partition(".")[0] or "a module"
    extra = _FRAMEWORK_EXTRAS.get(top)
    fix = f"pip install '{extra}'" if extra else "install it there, or set environment.python"
    return HarnessError(
        f"entrypoint {spec} needs {top}, which is not installed for {sys.executable} ({fix})"
    )


def load_trial_class(spec: str) -> type[Any]:
    module_name, sep, qualname = spec.partition(":")
    if not sep or not module_name or not qualname:
        raise HarnessError(
            f"entrypoint {spec!r}: expected 'module:TrialClass', e.g. model_def:MyTrial"
        )
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name:
            raise HarnessError(
                f"entrypoint {spec!r}: no module {module_name!r} in the model directory"
            ) from None
        raise _missing_module(spec, e) from None
    obj: Any = module
    for part in qualname.split("."):
        if not hasattr(obj, part):
            raise HarnessError(f"entrypoint {spec!r}: {module_name} has no attribute {qualname!r}")
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise HarnessError(f"entrypoint {spec!r}: {qualname} is not a class")
    return obj


def _period(length: Any, gbs: int | None) -> Any:
    from trialkit.pytorch import TrainUnit

    return TrainUnit._from_config(length, gbs)


def refuse_under_horovod(spec: str) -> None:
    """A PyTorchTrial started by horovodrun on several ranks: one line naming torch_distributed.

    Its harness averages gradients over torch.distributed (DDP), which horovodrun does not set
    up, so each rank would train alone."""
    from trialkit.config import horovod_refusal

    if int(os.environ.get("HOROVOD_SIZE") or "1") > 1 and "WORLD_SIZE" not in os.environ:
        raise HarnessError(horovod_refusal(spec).removeprefix("entrypoint: "))


def _subclasses(trial_class: type[Any], package: str, base: str) -> bool:
    """Whether ``trial_class`` derives from ``package.base``, if that package is imported: a
    model definition imports its Trial base, so asking imports no framework."""
    module = sys.modules.get(package)
    return module is not None and issubclass(trial_class, getattr(module, base))


def _other_runner(trial_class: type[Any]) -> Callable[[Any, Any], None] | None:
    """How a Trial class on a base other than PyTorchTrial runs under the master (None: it is
    not on one)."""
    if _subclasses(trial_class, "trialkit.keras", "TFKerasTrial"):
        from trialkit.keras._run import run_under_master as run_keras

        return run_keras
    if _subclasses(trial_class, "trialkit.deepspeed", "DeepSpeedTrial"):
        from trialkit.deepspeed._trainer import run_under_master as run_deepspeed

        return run_deepspeed
    if _subclasses(trial_class, "trialkit.lightning", "LightningTrial"):
        from trialkit.lightning._trial import run_under_master as run_lightning

        return run_lightning
    return None


def run(spec: str) -> None:
    info = trialkit.get_cluster_info()
    if info is None:
        raise HarnessError(
            "trialkit.exec.harness runs under the master; locally, use "
            "trialkit.pytorch.init() and Trainer(trial, context).fit(max_length=...)"
        )
    trial_class = load_trial_class(spec)
    try:
        runner = _other_runner(trial_class)
        if runner is not None:
            runner(trial_class, info)
            return
    except ModuleNotFoundError as e:
        raise _missing_module(spec, e) from None
    try:
        from trialkit import pytorch
    except ModuleNotFoundError as e:
        raise _missing_module(spec, e) from None

    if not issubclass(trial_class, pytorch.PyTorchTrial):
        raise HarnessError(
            f"entrypoint {spec!r}: {trial_class.__name__} is not a Trial class: subclass "
            "trialkit.pytorch.PyTorchTrial, trialkit.deepspeed.DeepSpeedTrial or "
            "trialkit.keras.TFKerasTrial"
        )
    refuse_under_horovod(spec)
    cfg = info.trial.experiment_config
    hparams = dict(info.trial.hparams)
    gbs = hparams.get("global_batch_size")
    with pytorch.init(
        hparams=hparams,
        exp_conf=info.trial.config,
        aggregation_frequency=cfg.optimizations.aggregation_frequency,
    ) as context:
        if context.distributed.rank != 0:
            logging.getLogger().setLevel(logging.DEBUG if cfg.debug else logging.WARNING)
        trial = trial_class(context)
        pytorch.Trainer(trial, context, _is_trainer=False).fit(
            checkpoint_period=_period(cfg.min_checkpoint_period.to_raw(), gbs),
            validation_period=_period(cfg.min_validation_period.to_raw(), gbs),
            reporting_period=pytorch.Batch(cfg.scheduling_unit),
            checkpoint_policy=cfg.checkpoint_policy,
            latest_checkpoint=info.latest_checkpoint,
            step_zero_validation=cfg.perform_initial_validation,
            profiling_enabled=cfg.profiling.enabled,
        )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, format=trialkit.LOG_FORMAT)
    if len(args) != 1:
        print("usage: python -m trialkit.exec.harness module:TrialClass", file=sys.stderr)
        return 2
    try:
        run(args[0])
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except Exception as e:
        # A Trial that breaks the contract (no model wrapped, both evaluate methods) is one
        # line; anything else keeps its traceback. Looked up, not imported: importing it needs
        # torch, which may be what is missing.
        contract = getattr(sys.modules.get("trialkit.pytorch._trial"), "TrialContractError", None)
        if contract is not None and isinstance(e, contract):
            print(f"error: {e}", file=sys.stderr)
            return 1
        raise
    return 0


if __name__ == "__main__":
    # Run the importable module's main, not this __main__ copy: a Trial package's errors
    # subclass trialkit.exec.harness.HarnessError, which must be the class main() catches.
    from trialkit.exec.harness import main as _main

    sys.exit(_main())
