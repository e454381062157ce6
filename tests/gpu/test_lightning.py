"""The Lightning callback (TrialkitCallback) on the GPU: the lightning_mnist example's module and
data under ``accelerator="gpu"`` with ``precision="16-mixed"`` and ``"bf16-mixed"``."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("lightning")
torch = pytest.importorskip("torch")

from tests.integration.conftest import EXAMPLES  # noqa: E402
from tests.lightning.test_local import _store  # noqa: E402
from trialkit import core  # noqa: E402
from trialkit.lightning import TrialkitCallback  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("precision", ["16-mixed", "bf16-mixed"])
def test_callback_on_the_gpu_in_mixed_precision(
    device: str, precision: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lightning.pytorch as pl

    if device == "cpu" and precision == "16-mixed":
        pytest.skip("16-mixed is CUDA's; the CPU dry run covers bf16-mixed")
    monkeypatch.setenv("TRIALKIT_HOME", str(tmp_path / "home"))
    monkeypatch.syspath_prepend(str(EXAMPLES / "lightning_mnist"))
    import train  # the example's module and data

    seen: list[tuple[str, torch.dtype]] = []
    weights: set[tuple[str, torch.dtype]] = set()

    class Probe(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx) -> None:  # type: ignore[no-untyped-def]
            with trainer.precision_plugin.forward_context():
                out = module.net(batch[0][:2])
            seen.append((batch[0].device.type, out.dtype))
            # mixed precision keeps the weights fp32 on the device while it trains (Lightning moves
            # the module back to the CPU when fit ends, so look here, not after fit)
            weights.update((p.device.type, p.dtype) for p in module.parameters())

    with core.init() as core_context:
        trainer = pl.Trainer(
            accelerator="gpu" if device == "cuda" else "cpu",
            devices=1,
            precision=precision,
            max_epochs=2,
            callbacks=[TrialkitCallback(core_context, train_metrics_report_period=5), Probe()],
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        module = train.MNISTModule(16, 0.0, 0.05)
        trainer.fit(module, datamodule=train.SyntheticMNIST(32))
    half = torch.float16 if precision == "16-mixed" else torch.bfloat16
    assert seen and set(seen) == {(device, half)}
    assert weights == {(device, torch.float32)}
    training, validation, checkpoints = _store(tmp_path / "home")
    # As tests/lightning's local run: 20 batches an epoch, a report every 5, validation per epoch.
    assert [m.steps_completed for m in training] == list(range(5, 41, 5))
    assert all(torch.isfinite(torch.tensor(m.values["loss"])) for m in training)
    assert [m.steps_completed for m in validation] == [20, 40]
    assert [c.steps_completed for c in checkpoints] == [40]
