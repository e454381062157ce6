"""DeepSpeedTrials the tests run: a linear regression (one engine, any ZeRO stage) and a tiny
GAN (two engines). Data is generated; settings come from the hyperparameters."""

from __future__ import annotations

import time
from typing import Any

import torch

import deepspeed
from trialkit import deepspeed as tkds
from trialkit import pytorch


class _Points(torch.utils.data.Dataset[Any]):
    def __init__(self, n: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 4, generator=g)
        self.y = self.x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[i], self.y[i]


def ds_config(hparams: dict[str, Any]) -> dict[str, Any]:
    return tkds.overwrite_deepspeed_config(
        {
            "train_micro_batch_size_per_gpu": 4,
            "gradient_accumulation_steps": 1,
            "optimizer": {"type": "Adam", "params": {"lr": 0.05, "torch_adam": True}},
            "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 5}},
            "zero_optimization": {"stage": 0},
            "steps_per_print": 10**9,
        },
        hparams.get("ds", {}),
    )


def gathered_weights(trial: tkds.DeepSpeedTrial) -> list[torch.Tensor]:
    """Every engine's full parameters (ZeRO-3 partitions them: gathered first)."""
    out = []
    for engine in trial.context.models:
        params = list(engine.module.parameters())
        with deepspeed.zero.GatheredParameters(params):
            out += [p.detach().clone() for p in params]
    return out


class LinearTrial(tkds.DeepSpeedTrial):
    """y = x·w + b with dropout (the RNG state matters) and a shuffled loader."""

    def __init__(self, context: tkds.DeepSpeedTrialContext) -> None:
        self.context = context
        hp = context.get_hparams()
        model = torch.nn.Sequential(
            torch.nn.Linear(4, 8), torch.nn.Dropout(0.1), torch.nn.Linear(8, 1)
        )
        engine, _, _, _ = deepspeed.initialize(
            model=model, model_parameters=model.parameters(), config=ds_config(hp)
        )
        self.engine = context.wrap_model_engine(engine)
        self.stop_at = hp.get("stop_at")
        self.sleep = float(hp.get("sleep", 0))
        self.seen: list[tuple[int, int]] = []

    def build_training_data_loader(self) -> Any:
        micro = self.context.get_train_micro_batch_size_per_gpu()
        return pytorch.DataLoader(_Points(96, 0), batch_size=micro, shuffle=True)

    def build_validation_data_loader(self) -> Any:
        return pytorch.DataLoader(_Points(32, 1), batch_size=8)

    def train_batch(self, dataloader_iter: Any, epoch_idx: int, batch_idx: int) -> Any:
        self.seen.append((epoch_idx, batch_idx))
        time.sleep(self.sleep)
        x, y = self.context.to_device(next(dataloader_iter))
        loss = torch.nn.functional.mse_loss(self.engine(x), y)
        self.engine.backward(loss)
        self.engine.step()
        if self.stop_at is not None and batch_idx + 1 == self.stop_at:
            self.context.set_stop_requested(True)
        return {"loss": loss, "epoch": epoch_idx, "batch": batch_idx}

    def evaluate_batch(self, dataloader_iter: Any, batch_idx: int) -> dict[str, Any]:
        x, y = self.context.to_device(next(dataloader_iter))
        return {"val_loss": torch.nn.functional.mse_loss(self.engine(x), y)}


class FullDatasetTrial(LinearTrial):
    """Validates with evaluate_full_dataset instead of evaluate_batch."""

    evaluate_batch = tkds.DeepSpeedTrial.evaluate_batch  # type: ignore[assignment]

    def evaluate_full_dataset(self, data_loader: Any) -> dict[str, Any]:
        total, n = 0.0, 0
        for x, y in data_loader:
            total += float(torch.nn.functional.mse_loss(self.engine(x), y, reduction="sum"))
            n += len(x)
        return {"val_loss": total / n, "val_records": n}


class _Noise(torch.utils.data.Dataset[Any]):
    def __init__(self, n: int) -> None:
        self.real = torch.randn(n, 2, generator=torch.Generator().manual_seed(3)) * 0.5 + 2.0

    def __len__(self) -> int:
        return len(self.real)

    def __getitem__(self, i: int) -> torch.Tensor:
        return self.real[i]


class GANTrial(tkds.DeepSpeedTrial):
    """Two engines (generator, discriminator), as in Determined's DCGAN example, in miniature."""

    def __init__(self, context: tkds.DeepSpeedTrialContext) -> None:
        self.context = context
        hp = context.get_hparams()
        gen = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        disc = torch.nn.Sequential(
            torch.nn.Linear(2, 8), torch.nn.LeakyReLU(0.2), torch.nn.Linear(8, 1)
        )
        cfg = ds_config(hp)
        cfg.pop("scheduler")
        self.gen = context.wrap_model_engine(
            deepspeed.initialize(model=gen, model_parameters=gen.parameters(), config=cfg)[0]
        )
        self.disc = context.wrap_model_engine(
            deepspeed.initialize(model=disc, model_parameters=disc.parameters(), config=cfg)[0]
        )
        self.stop_at = hp.get("stop_at")

    def build_training_data_loader(self) -> Any:
        micro = self.context.get_train_micro_batch_size_per_gpu()
        return pytorch.DataLoader(_Noise(64), batch_size=micro, shuffle=True)

    def build_validation_data_loader(self) -> Any:
        return pytorch.DataLoader(_Noise(16), batch_size=8)

    def train_batch(self, dataloader_iter: Any, epoch_idx: int, batch_idx: int) -> Any:
        real = self.context.to_device(next(dataloader_iter))
        bce = torch.nn.functional.binary_cross_entropy_with_logits
        fake = self.gen(torch.randn(len(real), 3))
        ones, zeros = torch.ones(len(real), 1), torch.zeros(len(real), 1)
        d_loss = bce(self.disc(real), ones) + bce(self.disc(fake.detach()), zeros)
        self.disc.backward(d_loss)
        self.disc.step()
        # The generator's step must leave no gradients on the discriminator: they would be
        # state outside every checkpoint (and trip ZeRO's gradient hooks).
        self.disc.requires_grad_(False)
        g_loss = bce(self.disc(fake), ones)
        self.gen.backward(g_loss)
        self.gen.step()
        self.disc.requires_grad_(True)
        if self.stop_at is not None and batch_idx + 1 == self.stop_at:
            self.context.set_stop_requested(True)
        return {"d_loss": d_loss, "g_loss": g_loss}

    def evaluate_batch(self, dataloader_iter: Any) -> dict[str, Any]:
        real = self.context.to_device(next(dataloader_iter))
        fake = self.gen(torch.randn(len(real), 3))
        return {"gap": (fake.mean(0) - real.mean(0)).abs().sum()}


class PipelineTrial(tkds.DeepSpeedTrial):
    """A PipelineModule: the engine pulls every micro batch of a step itself."""

    def __init__(self, context: tkds.DeepSpeedTrialContext) -> None:
        from deepspeed.pipe import PipelineModule

        self.context = context
        hp = context.get_hparams()
        layers = [torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)]
        model = PipelineModule(
            layers=layers,
            num_stages=int(hp.get("stages", 1)),
            loss_fn=torch.nn.functional.mse_loss,
        )
        cfg = ds_config(hp)
        engine, _, _, _ = deepspeed.initialize(
            model=model, model_parameters=model.parameters(), config=cfg
        )
        self.engine = context.wrap_model_engine(engine)
        self.stop_at = hp.get("stop_at")

    def build_training_data_loader(self) -> Any:
        micro = self.context.get_train_micro_batch_size_per_gpu()
        return pytorch.DataLoader(_Points(96, 0), batch_size=micro, shuffle=True)

    def build_validation_data_loader(self) -> Any:
        micro = self.context.get_train_micro_batch_size_per_gpu()
        return pytorch.DataLoader(_Points(32, 1), batch_size=micro)

    def train_batch(self, dataloader_iter: Any, epoch_idx: int, batch_idx: int) -> Any:
        loss = self.engine.train_batch(dataloader_iter)
        if self.stop_at is not None and batch_idx + 1 == self.stop_at:
            self.context.set_stop_requested(True)
        return {"loss": loss}

    def evaluate_batch(self, dataloader_iter: Any, batch_idx: int) -> dict[str, Any]:
        return {"val_loss": self.engine.eval_batch(dataloader_iter)}


class ManualAccumulationTrial(LinearTrial):
    """train_batch once per step: it pulls and steps every micro batch itself."""

    def __init__(self, context: tkds.DeepSpeedTrialContext) -> None:
        super().__init__(context)
        context.disable_auto_grad_accumulation()

    def train_batch(self, dataloader_iter: Any, epoch_idx: int, batch_idx: int) -> Any:
        losses = [
            super(ManualAccumulationTrial, self).train_batch(dataloader_iter, epoch_idx, batch_idx)
            for _ in range(self.context.get_num_micro_batches_per_slot())
        ]
        return {"loss": sum(m["loss"] for m in losses) / len(losses)}


class _Count(pytorch.MetricReducer):
    def __init__(self) -> None:
        self.n = 0

    def reset(self) -> None:
        self.n = 0

    def update(self, n: int) -> None:
        self.n += n

    def per_slot_reduce(self) -> int:
        return self.n

    def cross_slot_reduce(self, per_slot_metrics: list[int]) -> int:
        return sum(per_slot_metrics)


class NoDataTrial(LinearTrial):
    """Builds no data loaders (as a rank that needs no data would): makes its own data, counts
    records with a custom reducer and records the context's epoch helpers."""

    def __init__(self, context: tkds.DeepSpeedTrialContext) -> None:
        super().__init__(context)
        self.records = context.wrap_reducer(_Count(), name="records_seen")
        self.epoch_flags: list[tuple[bool, bool, int]] = []

    def build_training_data_loader(self) -> Any:
        return None

    def build_validation_data_loader(self) -> Any:
        return None

    def train_batch(self, dataloader_iter: Any, epoch_idx: int, batch_idx: int) -> Any:
        assert dataloader_iter is None
        c = self.context
        self.epoch_flags.append((c.is_epoch_start(), c.is_epoch_end(), c.current_train_epoch()))
        x = torch.randn(4, 4)
        loss = self.engine(x).pow(2).mean()
        self.engine.backward(loss)
        self.engine.step()
        self.records.update(len(x))  # type: ignore[attr-defined]
        return loss

    evaluate_batch = tkds.DeepSpeedTrial.evaluate_batch  # type: ignore[assignment]

    def evaluate_full_dataset(self, data_loader: Any) -> dict[str, Any]:
        assert data_loader is None
        self.records.update(8)  # type: ignore[attr-defined]
        return {"val_loss": float(self.engine(torch.ones(8, 4)).pow(2).mean())}


class CustomSaveTrial(LinearTrial):
    """Overrides save/load: one file of its own next to the engine's default tag directory."""

    loaded_note: str | None = None

    def save(self, context: tkds.DeepSpeedTrialContext, path: Any) -> None:
        super().save(context, path)
        (path / f"note{context.distributed.rank}.txt").write_text(
            f"steps {self.engine.global_steps}"
        )

    def load(self, context: tkds.DeepSpeedTrialContext, path: Any) -> None:
        super().load(context, path)
        CustomSaveTrial.loaded_note = (path / f"note{context.distributed.rank}.txt").read_text()
