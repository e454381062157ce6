"""Start a multi-slot ``model_def:Trial`` with the launcher its harness needs.

``python3 -m trialkit.launch.auto [LAUNCHER_OPTIONS...] --trial module:Class`` imports the Trial
class (from the model directory on PYTHONPATH), finds the first class of its MRO that belongs to
a harness in ``LAUNCHERS`` and replaces itself with that launcher (same pid, same arguments):
PyTorchTrial and DeepSpeedTrial → torch_distributed, TFKerasTrial → tensorflow. A class of no known harness gets
torch_distributed, as Determined starts every Trial type. The master runs this rather than
importing a framework itself.
"""

from __future__ import annotations

import os
import shlex
import sys

from ._common import LaunchError, log, run_main

#: Harness package → the launcher module its multi-slot trials run under (first match in the
#: Trial class's MRO wins, so a harness may subclass another's Trial). DeepSpeedTrial runs under
#: torch_distributed too: DeepSpeed joins the torch process group that launcher sets up, and the
#: launcher form (``trialkit.launch.deepspeed -- ...``) remains for DeepSpeed's own runner.
LAUNCHERS: dict[str, str] = {
    "trialkit.deepspeed": "trialkit.launch.torch_distributed",
    "trialkit.pytorch": "trialkit.launch.torch_distributed",
    "trialkit.keras": "trialkit.launch.tensorflow",
}
DEFAULT_LAUNCHER = "trialkit.launch.torch_distributed"


def harness_base(trial_class: type) -> tuple[type | None, str]:
    """The first class of ``trial_class``'s MRO from a harness in ``LAUNCHERS`` (None if
    none) and the launcher module its trials run under."""
    for cls in trial_class.__mro__:
        for package, launcher in LAUNCHERS.items():
            if cls.__module__ == package or cls.__module__.startswith(package + "."):
                return cls, launcher
    return None, DEFAULT_LAUNCHER


def launcher_for(trial_class: type) -> str:
    """The launcher module for ``trial_class``, by the harness its base class comes from."""
    return harness_base(trial_class)[1]


def _trial_spec(argv: list[str]) -> str:
    for i, arg in enumerate(argv):
        if arg == "--trial" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--trial="):
            return arg.partition("=")[2]
    raise LaunchError(
        "usage: python3 -m trialkit.launch.auto [LAUNCHER_OPTIONS...] --trial module:Class"
    )


def main(argv: list[str]) -> int:
    from ..exec.harness import HarnessError, load_trial_class

    spec = _trial_spec(argv)
    try:
        trial_class = load_trial_class(spec)
    except HarnessError as e:
        raise LaunchError(str(e)) from None
    base, launcher = harness_base(trial_class)
    kind = f"a {base.__name__}" if base is not None else "of no known harness"
    log(f"{spec} is {kind}: python3 -m {launcher} {shlex.join(argv)}")
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [sys.executable, "-m", launcher, *argv])
    return 1  # not reached


if __name__ == "__main__":
    run_main(main)
