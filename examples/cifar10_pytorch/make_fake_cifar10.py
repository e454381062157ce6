"""Write a small random data set in CIFAR-10's python-pickle format, for trying the example
without the real data: ``python3 make_fake_cifar10.py data --per-batch 40``."""

from __future__ import annotations

import argparse
import pickle
from pathlib import Path

import numpy as np
from cifar10_data import FOLDER, TEST_BATCHES, TRAIN_BATCHES

LABELS = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def write_fake_cifar10(path: str | Path, per_batch: int, seed: int = 0) -> Path:
    """Six batch files of ``per_batch`` images each, and ``batches.meta``; returns the folder."""
    root = Path(path) / FOLDER
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for name in (*TRAIN_BATCHES, *TEST_BATCHES):
        entry = {
            b"batch_label": name.encode(),
            b"labels": [int(v) for v in rng.integers(0, 10, per_batch)],
            b"data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
            b"filenames": [f"{name}_{i}.png".encode() for i in range(per_batch)],
        }
        (root / name).write_bytes(pickle.dumps(entry, protocol=2))
    meta = {
        b"label_names": [n.encode() for n in LABELS],
        b"num_cases_per_batch": per_batch,
        b"num_vis": 3072,
    }
    (root / "batches.meta").write_bytes(pickle.dumps(meta, protocol=2))
    return root


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("directory")
    parser.add_argument("--per-batch", type=int, default=40)
    args = parser.parse_args()
    print("wrote", write_fake_cifar10(args.directory, args.per_batch))
