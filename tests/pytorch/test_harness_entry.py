"""trialkit.exec.harness argument handling (the master-side runs are integration tests)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from trialkit.exec import harness  # noqa: E402


def test_entrypoint_spec_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(harness.HarnessError, match="expected 'module:TrialClass'"):
        harness.load_trial_class("model_def")
    with pytest.raises(harness.HarnessError, match="no module 'zz_no_such_module'"):
        harness.load_trial_class("zz_no_such_module:T")
    with pytest.raises(harness.HarnessError, match="has no attribute 'Nope'"):
        harness.load_trial_class("tests.pytorch.trials:Nope")
    with pytest.raises(harness.HarnessError, match="is not a class"):
        harness.load_trial_class("tests.pytorch.trials:dataset")
    assert harness.main(["a", "b"]) == 2


def test_harness_outside_the_master_points_to_the_trainer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert harness.main(["tests.pytorch.trials:RegressionTrial"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: trialkit.exec.harness runs under the master") and "\n" not in err


def test_the_runner_is_chosen_by_the_trial_base_class_without_importing_a_framework() -> None:
    """A TFKerasTrial runs under the Keras runner, a PyTorchTrial under the harness Trainer
    (no other runner); finding out imports neither Keras nor TensorFlow."""
    import subprocess
    import sys

    probe = (
        "import sys, trialkit.keras, trialkit.pytorch\n"
        "from trialkit.exec.harness import _other_runner\n"
        "class K(trialkit.keras.TFKerasTrial): pass\n"
        "class P(trialkit.pytorch.PyTorchTrial): pass\n"
        "k = _other_runner(K)\n"
        "print(k.__module__, _other_runner(P), _other_runner(int),"
        " 'keras' in sys.modules or 'tensorflow' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["trialkit.keras._run", "None", "None", "False"]
