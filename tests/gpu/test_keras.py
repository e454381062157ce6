"""The Keras callback on Keras 3's torch backend on the GPU: tests/keras/callback_train.py (a
user's own ``model.fit``) trains with its weights on CUDA, reports and checkpoints each epoch."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO, child_env

pytestmark = [pytest.mark.gpu, pytest.mark.integration]


def test_callback_on_the_torch_backend(device: str, tmp_path: Path) -> None:
    if importlib.util.find_spec("keras") is None:
        pytest.skip("keras is not installed (scripts/gpu_wheels.sh carries Keras 3)")
    from tests.local_runs import ingested_store

    home = tmp_path / "home"
    env = child_env(TRIALKIT_HOME=str(home), TEST_WEIGHTS_OUT=str(tmp_path / "w.json"))
    for name in ("TRIALKIT_CLUSTER_INFO", "TEST_CHECKPOINT", "TF_USE_LEGACY_KERAS"):
        env.pop(name, None)
    p = subprocess.run(
        [sys.executable, "-m", "tests.gpu.keras_gpu_train", "3"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    assert f"KERAS torch {device}" in out, out[-2000:]
    assert json.loads((tmp_path / "w.json").read_text())["steps"] == 12
    store = ingested_store(home)
    try:
        trial = store.list_trials()[-1]
        train = store.list_metrics(trial.id, "training")
        ckpts = store.list_checkpoints(trial_id=trial.id)
    finally:
        store.close()
    # As tests/keras/test_callback.py's local run: 64 rows / batch 16 = 4 batches an epoch.
    assert [m.steps_completed for m in train] == [4, 8, 12]
    assert [c.steps_completed for c in ckpts] == [4, 8, 12]
    assert "model.weights.h5" in ckpts[-1].resources
