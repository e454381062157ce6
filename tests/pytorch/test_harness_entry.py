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
