"""The CIFAR-10 example's local-file loader on tiny data sets in CIFAR-10's python format."""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.docs.blocks import REPO

sys.path.insert(0, str(REPO / "examples" / "cifar10_pytorch"))
import cifar10_data  # noqa: E402
from make_fake_cifar10 import LABELS, write_fake_cifar10  # noqa: E402


def test_fake_set_round_trips_pixels_and_labels(tmp_path: Path) -> None:
    root = write_fake_cifar10(tmp_path, per_batch=3, seed=5)
    raw = pickle.loads((root / "data_batch_2").read_bytes(), encoding="bytes")
    images, labels = cifar10_data.load_split(tmp_path, train=True)
    assert images.shape == (15, 32, 32, 3) and images.dtype == np.uint8
    assert labels.tolist()[3:6] == raw[b"labels"]
    # Row 0 of batch 2: its first 1024 bytes are the red plane, row by row.
    assert (images[3, :, :, 0].reshape(-1) == raw[b"data"][0, :1024]).all()
    assert (images[3, 0, :, 2] == raw[b"data"][0, 2048:2080]).all()
    test_images, _ = cifar10_data.load_split(root, train=False)  # the folder itself works too
    assert len(test_images) == 3
    assert cifar10_data.label_names(tmp_path) == LABELS


def test_python2_style_batch_file(tmp_path: Path) -> None:
    """The real files are Python 2 pickles: str keys and numpy.core.multiarray globals."""
    data = np.arange(2 * 3072, dtype=np.uint8).reshape(2, 3072)
    body = pickle.dumps({"labels": [3, 7], "data": data}, protocol=2)
    body = body.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    body = body.replace(b"X\x06\x00\x00\x00labels", b"U\x06labels")  # SHORT_BINSTRING, as py2
    body = body.replace(b"X\x04\x00\x00\x00data", b"U\x04data")
    assert b"cnumpy.core.multiarray\n_reconstruct" in body and b"U\x06labels" in body
    (tmp_path / "test_batch").write_bytes(body)
    images, labels = cifar10_data.read_batch(tmp_path / "test_batch")
    assert labels.tolist() == [3, 7]
    assert images[1, 0, 0].tolist() == [3072 % 256, (3072 + 1024) % 256, (3072 + 2048) % 256]


def test_a_batch_file_cannot_run_code(tmp_path: Path) -> None:
    class Evil:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, ("touch pwned",))

    (tmp_path / "test_batch").write_bytes(pickle.dumps({b"data": Evil()}, protocol=2))
    with pytest.raises(pickle.UnpicklingError, match="not allowed in a CIFAR-10 batch file"):
        cifar10_data.read_batch(tmp_path / "test_batch")


def test_missing_data_says_what_to_unpack(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="cifar-10-batches-py/batches.meta"):
        cifar10_data.load_split(tmp_path, train=True)
