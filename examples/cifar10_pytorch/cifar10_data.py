"""Read CIFAR-10 from a local directory in its python-pickle format (no downloads, no
torchvision): ``cifar-10-batches-py/`` with ``data_batch_1`` .. ``data_batch_5``,
``test_batch`` and ``batches.meta``, as unpacked from ``cifar-10-python.tar.gz``.

Each batch file is a pickled dict with ``b"data"`` (uint8, N x 3072: the 1024 red, then green,
then blue values of each 32x32 image, row by row) and ``b"labels"`` (N ints in 0..9). The files
are read with an unpickler that only builds numpy arrays, so a tampered file cannot run code.
"""

from __future__ import annotations

import codecs
import pickle
from pathlib import Path
from typing import Any

import numpy as np

FOLDER = "cifar-10-batches-py"
TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCHES = ("test_batch",)
#: The only globals a CIFAR-10 pickle needs (numpy 1.x and 2.x spell the module differently).
_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("_codecs", "encode"),  # how Python 3 writes bytes at protocol 2 (the fake data set)
}


class _NumpyOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(
                f"{module}.{name}: not allowed in a CIFAR-10 batch file (only numpy arrays are)"
            )
        if name == "_reconstruct":
            return np.ndarray.__reduce__(np.zeros(0))[0]  # numpy's own _reconstruct
        if module == "_codecs":
            return codecs.encode
        return getattr(np, name)


def find_root(path: str | Path) -> Path:
    """The ``cifar-10-batches-py`` directory: ``path`` itself, or the folder of that name in it."""
    path = Path(path)
    for candidate in (path, path / FOLDER):
        if (candidate / "batches.meta").is_file():
            return candidate
    raise FileNotFoundError(
        f"{path}: no CIFAR-10 here; expected {FOLDER}/batches.meta (unpack cifar-10-python.tar.gz)"
    )


def read_batch(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """One batch file as (images N x 32 x 32 x 3 uint8, labels N int64)."""
    with open(path, "rb") as f:
        entry = _NumpyOnlyUnpickler(f, encoding="bytes").load()
    data = np.asarray(entry[b"data"], dtype=np.uint8)
    labels = np.asarray(entry[b"labels"], dtype=np.int64)
    if data.ndim != 2 or data.shape[1] != 3072 or len(labels) != len(data):
        raise ValueError(
            f"{path}: expected data N x 3072 and N labels, got {data.shape} and {labels.shape}"
        )
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels


def load_split(path: str | Path, train: bool) -> tuple[np.ndarray, np.ndarray]:
    """The training (five batches) or test split, concatenated in file order."""
    root = find_root(path)
    parts = [read_batch(root / name) for name in (TRAIN_BATCHES if train else TEST_BATCHES)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def label_names(path: str | Path) -> list[str]:
    """The ten class names from ``batches.meta``."""
    with open(find_root(path) / "batches.meta", "rb") as f:
        meta = _NumpyOnlyUnpickler(f, encoding="bytes").load()
    return [name.decode() for name in meta[b"label_names"]]
