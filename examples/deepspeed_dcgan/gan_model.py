"""A DCGAN generator and discriminator for 16x16 images (strided (de)convolutions with batch
norm, as in Radford et al.), small enough to train on a CPU."""

from __future__ import annotations

import torch
from torch import nn


def weights_init(m: nn.Module) -> None:
    """DCGAN's initialisation: N(0, 0.02) convolutions, N(1, 0.02) batch-norm scales."""
    if isinstance(m, nn.Conv2d | nn.ConvTranspose2d):
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


class Generator(nn.Module):
    """Noise (N, noise_length, 1, 1) -> images (N, channels, 16, 16) in [-1, 1]."""

    def __init__(self, width: int, channels: int, noise_length: int) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(noise_length, width * 2, 4, 1, 0, bias=False),  # 4x4
            nn.BatchNorm2d(width * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(width * 2, width, 4, 2, 1, bias=False),  # 8x8
            nn.BatchNorm2d(width),
            nn.ReLU(True),
            nn.ConvTranspose2d(width, channels, 4, 2, 1, bias=False),  # 16x16
            nn.Tanh(),
        )

    def forward(self, noise: torch.Tensor) -> torch.Tensor:
        return self.main(noise)  # type: ignore[no-any-return]


class Discriminator(nn.Module):
    """Images (N, channels, 16, 16) -> the logit that each is real, shape (N,)."""

    def __init__(self, width: int, channels: int) -> None:
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(channels, width, 4, 2, 1, bias=False),  # 8x8
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(width, width * 2, 4, 2, 1, bias=False),  # 4x4
            nn.BatchNorm2d(width * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(width * 2, 1, 4, 1, 0, bias=False),  # 1x1
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.main(images).view(-1)  # type: ignore[no-any-return]
