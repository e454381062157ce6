"""Generated images: one bright Gaussian blob per 16x16 single-channel image, at a random
position, scaled to [-1, 1] (the generator ends in tanh). Nothing is downloaded."""

from __future__ import annotations

import torch

IMAGE_SIZE = 16
CHANNELS = 1


class Blobs(torch.utils.data.Dataset[torch.Tensor]):
    """``n`` images, the same for a given ``seed`` on every rank."""

    def __init__(self, n: int, seed: int, width: float = 2.0) -> None:
        g = torch.Generator().manual_seed(seed)
        centres = 3 + torch.rand(n, 2, generator=g) * (IMAGE_SIZE - 7)
        axis = torch.arange(IMAGE_SIZE, dtype=torch.float32)
        dy = axis.view(1, -1, 1) - centres[:, 0].view(-1, 1, 1)
        dx = axis.view(1, 1, -1) - centres[:, 1].view(-1, 1, 1)
        blobs = torch.exp(-(dx**2 + dy**2) / (2 * width**2))
        self.images = (blobs * 2 - 1).unsqueeze(1)  # (n, 1, H, W) in [-1, 1]

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.images[i]
