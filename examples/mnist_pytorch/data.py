"""A synthetic MNIST stand-in: 28x28 single-channel "digits" generated from ten fixed class
patterns plus noise and a random shift, so the example needs no downloads and no torchvision."""

from __future__ import annotations

import torch
from torch.utils.data import TensorDataset


def _prototypes() -> torch.Tensor:
    g = torch.Generator().manual_seed(2024)
    coarse = (torch.rand(10, 1, 7, 7, generator=g) > 0.6).float()
    return torch.nn.functional.interpolate(
        coarse, size=(28, 28), mode="bilinear", align_corners=False
    )


def make_dataset(train: bool, records: int | None = None) -> TensorDataset:
    """Deterministic images (N, 1, 28, 28) normalised like MNIST, and labels 0-9."""
    n = records or (6000 if train else 1000)
    g = torch.Generator().manual_seed(1 if train else 2)
    labels = torch.randint(0, 10, (n,), generator=g)
    images = _prototypes()[labels] * (0.6 + 0.8 * torch.rand(n, 1, 1, 1, generator=g))
    shifts = torch.randint(-2, 3, (n, 2), generator=g)
    for i in range(n):
        images[i] = torch.roll(
            images[i], shifts=(int(shifts[i, 0]), int(shifts[i, 1])), dims=(1, 2)
        )
    images = images + 0.9 * torch.randn(images.shape, generator=g)
    images = (images - 0.1307) / 0.3081
    return TensorDataset(images, labels)
