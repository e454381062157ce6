"""DCGAN as a DeepSpeedTrial with two engines, a generator and a discriminator (after
Determined's deepspeed/dcgan example), on generated 16x16 blob images."""

from __future__ import annotations

from typing import Any

import data
import torch
from gan_model import Discriminator, Generator, weights_init

import deepspeed
from trialkit import pytorch
from trialkit.deepspeed import DeepSpeedTrial, DeepSpeedTrialContext, overwrite_deepspeed_config

bce = torch.nn.functional.binary_cross_entropy_with_logits


class DCGANTrial(DeepSpeedTrial):
    def __init__(self, context: DeepSpeedTrialContext) -> None:
        self.context = context
        self.hparams = context.get_hparams()
        data_config = context.get_data_config()
        self.train_records = int(data_config.get("train_records", 512))
        self.val_records = int(data_config.get("val_records", 128))
        self.noise_length = int(self.hparams["noise_length"])
        gen_net = Generator(
            int(self.hparams["generator_width_base"]), data.CHANNELS, self.noise_length
        )
        gen_net.apply(weights_init)
        disc_net = Discriminator(int(self.hparams["discriminator_width_base"]), data.CHANNELS)
        disc_net.apply(weights_init)
        ds_config = overwrite_deepspeed_config(
            self.hparams["deepspeed_config"], self.hparams.get("overwrite_deepspeed_args", {})
        )
        generator, _, _, _ = deepspeed.initialize(
            model=gen_net, model_parameters=gen_net.parameters(), config=ds_config
        )
        discriminator, _, _, _ = deepspeed.initialize(
            model=disc_net, model_parameters=disc_net.parameters(), config=ds_config
        )
        self.generator = context.wrap_model_engine(generator)
        self.discriminator = context.wrap_model_engine(discriminator)
        if generator.fp16_enabled():
            self.dtype = torch.float16
        elif generator.bfloat16_enabled():
            self.dtype = torch.bfloat16
        else:
            self.dtype = torch.float32

    def _noise(self, n: int, generator: torch.Generator | None = None) -> torch.Tensor:
        z = torch.randn(n, self.noise_length, 1, 1, generator=generator)
        return self.context.to_device(z).to(self.dtype)  # type: ignore[no-any-return]

    def train_batch(self, dataloader_iter: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        real = self.context.to_device(next(dataloader_iter)).to(self.dtype)
        ones = torch.ones(len(real), dtype=self.dtype, device=real.device)
        zeros = torch.zeros_like(ones)

        # (1) Update D: maximize log(D(x)) + log(1 - D(G(z))).
        fake = self.generator(self._noise(len(real)))
        out_real = self.discriminator(real)
        out_fake = self.discriminator(fake.detach())
        err_d = bce(out_real, ones) + bce(out_fake, zeros)
        self.discriminator.backward(err_d)
        self.discriminator.step()

        # (2) Update G: maximize log(D(G(z))). D's parameters are frozen for this backward so it
        # leaves no gradients on them (they would be state outside every checkpoint), and D is
        # called as its bare module: an output of D's engine would run D's backward hooks inside
        # G's backward, which DeepSpeed refuses under ZeRO-0 ("Direct calls to
        # tensor.backward() are not supported").
        self.discriminator.requires_grad_(False)
        out_gen = self.discriminator.module(fake)
        err_g = bce(out_gen, ones)
        self.generator.backward(err_g)
        self.generator.step()
        self.discriminator.requires_grad_(True)

        return {
            "errD": err_d,
            "errG": err_g,
            "D_x": torch.sigmoid(out_real).mean(),
            "D_G_z1": torch.sigmoid(out_fake).mean(),
            "D_G_z2": torch.sigmoid(out_gen).mean(),
        }

    def evaluate_batch(self, dataloader_iter: Any, batch_idx: int) -> dict[str, Any]:
        """How far generated images are from real ones in brightness and peak, and how well
        D tells them apart; the noise is fixed per batch so validations compare."""
        real = self.context.to_device(next(dataloader_iter)).to(self.dtype)
        fake = self.generator(self._noise(len(real), torch.Generator().manual_seed(batch_idx)))
        ones = torch.ones(len(real), dtype=self.dtype, device=real.device)
        gap = (fake.mean() - real.mean()).abs() + (
            fake.amax(dim=(1, 2, 3)).mean() - real.amax(dim=(1, 2, 3)).mean()
        ).abs()
        return {
            "val_gap": gap,
            "val_errD": bce(self.discriminator(real), ones)
            + bce(self.discriminator(fake), torch.zeros_like(ones)),
        }

    def build_training_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(
            data.Blobs(self.train_records, seed=0),
            batch_size=self.context.get_train_micro_batch_size_per_gpu(),
            shuffle=True,
        )

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(
            data.Blobs(self.val_records, seed=1),
            batch_size=self.context.get_train_micro_batch_size_per_gpu(),
        )
