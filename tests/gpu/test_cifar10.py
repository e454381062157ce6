"""The CIFAR-10 example on the GPU with the real torchvision: ``torchvision.datasets.CIFAR10`` and
its transforms reading small local files this test writes in CIFAR-10's own format (Python 2
pickles, as in cifar-10-python.tar.gz; no download), the example's CIFARTrial trained on them,
and the porting guide's blocks run as a reader would (docs/porting-pytorchtrial.md)."""

from __future__ import annotations

import math
import pickle
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

from tests.docs import test_docs_examples  # noqa: E402
from tests.integration.conftest import EXAMPLES  # noqa: E402
from trialkit import pytorch  # noqa: E402

sys.path.insert(0, str(EXAMPLES / "cifar10_pytorch"))
import cifar10_data  # noqa: E402
import model_def  # noqa: E402
from make_fake_cifar10 import LABELS  # noqa: E402

pytestmark = pytest.mark.gpu


def _py2_pickle(entry: dict[str, Any]) -> bytes:
    """``entry`` pickled as Python 2 wrote CIFAR-10: its str keys as byte strings (SHORT_BINSTRING),
    which unpickle as bytes with encoding="bytes" (the example) and as str with "latin1"
    (torchvision)."""
    body = pickle.dumps(entry, protocol=2)
    for key in entry:
        py3 = b"X" + len(key).to_bytes(4, "little") + key.encode()
        assert py3 in body
        body = body.replace(py3, b"U" + bytes([len(key)]) + key.encode())
    return body


def write_cifar10(path: Path, per_batch: int, seed: int = 0) -> Path:
    root = path / cifar10_data.FOLDER
    root.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    for name in (*cifar10_data.TRAIN_BATCHES, *cifar10_data.TEST_BATCHES):
        entry = {
            "labels": [int(v) for v in rng.integers(0, 10, per_batch)],
            "data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
        }
        (root / name).write_bytes(_py2_pickle(entry))
    (root / "batches.meta").write_bytes(_py2_pickle({"label_names": LABELS}))
    return root


class LocalCIFAR10(torchvision.datasets.CIFAR10):
    """torchvision's CIFAR10 without the published files' MD5s (these files are the test's)."""

    train_list = [[name, None] for name in cifar10_data.TRAIN_BATCHES]
    test_list = [[name, None] for name in cifar10_data.TEST_BATCHES]
    meta = {"filename": "batches.meta", "key": "label_names", "md5": None}


def tv_dataset(root: str, train: bool, augment: bool = False) -> LocalCIFAR10:
    from torchvision import transforms as T

    steps: list[Any] = [T.RandomCrop(32, padding=4), T.RandomHorizontalFlip()] if augment else []
    steps += [T.ToTensor(), T.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))]
    return LocalCIFAR10(root, train=train, download=False, transform=T.Compose(steps))


class TorchvisionCIFARTrial(model_def.CIFARTrial):
    """The example's Trial with torchvision's data set and transforms (augmented for training)."""

    def build_training_data_loader(self) -> pytorch.DataLoader:
        data = tv_dataset(self.hparams["data"], train=True, augment=True)
        size = self.context.get_per_slot_batch_size()
        return pytorch.DataLoader(data, batch_size=size, shuffle=True)

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        data = tv_dataset(self.hparams["data"], train=False)
        return pytorch.DataLoader(data, batch_size=self.context.get_per_slot_batch_size())


def test_torchvision_reads_what_the_example_reads(tmp_path: Path) -> None:
    """No GPU needed: torchvision's CIFAR10 + ToTensor/Normalize equals the example's own loader."""
    write_cifar10(tmp_path, per_batch=4)
    tv = tv_dataset(str(tmp_path), train=True)
    ours = model_def.to_dataset(str(tmp_path), train=True)
    assert len(tv) == len(ours) == 20 and tv.classes == LABELS
    for i in range(len(tv)):
        image, label = tv[i]
        torch.testing.assert_close(image, ours[i][0])
        assert label == int(ours[i][1])


def test_cifar_trial_with_torchvision_trains_on_the_gpu(device: str, tmp_path: Path) -> None:
    write_cifar10(tmp_path, per_batch=32)
    hp = {"global_batch_size": 32, "data": str(tmp_path), "lr": 0.1, "momentum": 0.9,
          "weight_decay": 0.0001}  # fmt: skip
    with pytorch.init(hparams=hp, seed=1) as ctx:
        trial = TorchvisionCIFARTrial(ctx)
        trainer = pytorch.Trainer(trial, ctx)
        trainer.fit(max_length=pytorch.Epoch(2), validation_period=pytorch.Epoch(1),
                    checkpoint_policy="none")  # fmt: skip
    assert ctx.device.type == device
    assert all(p.device.type == device for p in trial.model.parameters())
    assert trainer.loop is not None and trainer.loop.progress.batches_trained == 10  # 160 / 32 x 2
    assert math.isfinite(trainer.loop.last_validation["val_loss"])


def test_the_porting_guide_runs_on_the_gpu(
    cuda: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    test_docs_examples.test_guide_runs("porting-pytorchtrial.md", tmp_path, request)
