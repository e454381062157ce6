"""The static entrypoint check of ``create`` and ``create --dry-run`` (issue 13, item 5): the
script or ``module:Class`` must be in the (packed) model directory; nothing is imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trialkit._modeldir import entrypoint_check, pack
from trialkit.master.search._create import CreateError, prepare_experiment

TRIAL_SOURCE = """
from trialkit.pytorch import PyTorchTrial
import does_not_exist_anywhere  # never imported by the check

class MyTrial(PyTorchTrial):
    pass

Alias = MyTrial
from elsewhere import Imported
"""


@pytest.fixture
def model(tmp_path: Path) -> Path:
    d = tmp_path / "model"
    (d / "pkg" / "sub").mkdir(parents=True)
    (d / "train.py").write_text("print('hi')\n")
    (d / "run.sh").write_text("echo hi\n")
    (d / "model_def.py").write_text(TRIAL_SOURCE)
    (d / "pkg" / "__init__.py").write_text("class PkgTrial: pass\n")
    (d / "pkg" / "sub" / "mod.py").write_text("class Deep: pass\n")
    (d / "broken.py").write_text("def (:\n")
    (d / "ignored.py").write_text("print('left out')\n")
    (d / ".trialkitignore").write_text("ignored.py\n")
    return d


def _check(entrypoint: str | list[str], model: Path) -> list[str]:
    return entrypoint_check(entrypoint, pack(model), f"model directory {model}")


@pytest.mark.parametrize(
    "entrypoint",
    [
        "python3 train.py",
        "python train.py --epochs 3",
        "/usr/bin/python3 -u -W ignore -X dev train.py",
        "FOO=1 BAR=2 python3.11 train.py",
        ["python3", "train.py"],
        "./run.sh",
        "sh run.sh",
        "model_def:MyTrial",
        "model_def:Alias",
        "model_def:Imported",
        "pkg:PkgTrial",
        "pkg.sub.mod:Deep",
        "broken:Anything",  # unparseable: cannot tell, so not refused
        "python3 -m trialkit.launch.torch_distributed -- python3 train.py",
        "python3 -m trialkit.launch.torch_distributed --trial model_def:MyTrial",
        "python3 -m trialkit.launch.wrap_rank RANK -- python3 train.py",
        # Not checkable statically: shell operators, -c, -m of a module that may be installed,
        # absolute paths, other programs.
        "cd elsewhere && python3 missing.py",
        "python3 -c 'import missing'",
        "python3 -m some_installed_module",
        "python3 /opt/elsewhere/train.py",
        "torchrun --nproc-per-node 2 missing.py",
    ],
)
def test_present_or_uncheckable_entrypoints_pass(entrypoint: str | list[str], model: Path) -> None:
    assert _check(entrypoint, model) == []


@pytest.mark.parametrize(
    ("entrypoint", "missing"),
    [
        ("python3 missing.py", "missing.py not found in model directory {m}"),
        (["python3", "-u", "missing.py"], "missing.py not found in model directory {m}"),
        ("FOO=1 python3 sub/missing.py", "sub/missing.py not found in model directory {m}"),
        ("./missing.sh", "./missing.sh not found in model directory {m}"),
        ("bash missing.sh", "missing.sh not found in model directory {m}"),
        ("python3 ignored.py", "ignored.py not found in model directory {m}"),
        ("nomod:Trial", "module nomod not found in model directory {m}"),
        ("pkg.nosub:Trial", "module pkg.nosub not found in model directory {m}"),
        (
            "python3 -m trialkit.launch.torch_distributed -- python3 missing.py",
            "missing.py not found in model directory {m}",
        ),
        (
            "python3 -m trialkit.launch.deepspeed --trial nomod:Trial",
            "module nomod not found in model directory {m}",
        ),
        (
            "python3 -m determined.launch.torch_distributed -- python3 missing.py",
            "missing.py not found in model directory {m}",
        ),
        (
            "python3 -m determined.launcher.deepspeed --trial nomod:Trial",
            "module nomod not found in model directory {m}",
        ),
    ],
)
def test_a_missing_script_or_module_is_named(
    entrypoint: str | list[str], missing: str, model: Path
) -> None:
    assert _check(entrypoint, model) == ["entrypoint: " + missing.format(m=model)]


def test_a_missing_class_is_named(model: Path) -> None:
    [line] = _check("model_def:NoSuchTrial", model)
    assert line.startswith(
        f"entrypoint: model_def.py in model directory {model} defines no NoSuchTrial"
    )


def test_the_master_refuses_a_missing_entrypoint_at_create(model: Path, tmp_path: Path) -> None:
    raw = {
        "entrypoint": "python3 missing.py",
        "searcher": {"name": "single", "metric": "loss", "max_length": 1},
    }
    with pytest.raises(CreateError) as caught:
        prepare_experiment(raw, 2, tmp_path / "home", model_def=pack(model))
    assert caught.value.errors == ["entrypoint: missing.py not found in the model directory sent"]
    with pytest.raises(CreateError) as caught:
        prepare_experiment(raw, 2, tmp_path / "home", model_def=None)
    assert caught.value.errors == [
        "entrypoint: missing.py not found in the model directory (none was sent)"
    ]
    config, _ = prepare_experiment(
        {**raw, "entrypoint": "python3 train.py"}, 2, tmp_path / "home", model_def=pack(model)
    )
    assert config.entrypoint == "python3 train.py"


def test_dry_run_names_the_missing_entrypoint_in_one_line(model: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "config.yaml"
    env = {**os.environ, "TRIALKIT_HOME": str(tmp_path / "home")}
    for entrypoint, missing in (
        ("python3 missing.py", f"missing.py not found in model directory {model}"),
        ("nomod:Trial", f"module nomod not found in model directory {model}"),
    ):
        cfg.write_text(
            json.dumps(
                {
                    "entrypoint": entrypoint,
                    "searcher": {"name": "single", "metric": "x", "max_length": {"batches": 1}},
                }
            )
        )
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "trialkit.cli",
                "e",
                "create",
                "--dry-run",
                str(cfg),
                str(model),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 2, out
        assert out.stderr.splitlines() == [f"trialkit: error: entrypoint: {missing}"]
    assert not (tmp_path / "home" / "master.json").exists()  # dry-run starts no master


HOROVOD_TRIALS = """
import determined as det

class Trial(det.pytorch.PyTorchTrial):
    pass

class KerasTrial(det.keras.TFKerasTrial):
    pass
"""


def test_a_pytorch_trial_under_the_horovod_launcher_is_refused_at_create(tmp_path: Path) -> None:
    """Issue 32 item 13: Determined's ``python3 -m determined.launch.horovod --autohorovod
    --trial model_def:Trial`` on 2 slots would train each rank alone; create refuses it in one
    line naming torch_distributed. One slot (run directly) and a TFKerasTrial are let through."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "model_def.py").write_text(HOROVOD_TRIALS)
    raw = {
        "searcher": {"name": "single", "metric": "loss", "max_length": 1},
        "resources": {"slots_per_trial": 2},
    }
    for entrypoint in (
        "python3 -m determined.launch.horovod --autohorovod --trial model_def:Trial",
        "python3 -m trialkit.launch.horovod -- python3 -m determined.exec.harness model_def:Trial",
    ):
        with pytest.raises(CreateError) as caught:
            prepare_experiment(
                {**raw, "entrypoint": entrypoint}, 2, tmp_path / "home", model_def=pack(model)
            )
        [line] = caught.value.errors
        assert line.startswith("entrypoint: model_def:Trial is a PyTorchTrial under the Horovod")
        assert "python3 -m trialkit.launch.torch_distributed --trial model_def:Trial" in line
    one_slot = {**raw, "resources": {"slots_per_trial": 1}}
    ok = "python3 -m determined.launch.horovod --autohorovod --trial model_def:Trial"
    prepare_experiment({**one_slot, "entrypoint": ok}, 2, tmp_path / "home", model_def=pack(model))
    keras = "python3 -m determined.launch.horovod --autohorovod --trial model_def:KerasTrial"
    prepare_experiment({**raw, "entrypoint": keras}, 2, tmp_path / "home", model_def=pack(model))
