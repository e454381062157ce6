"""``PyTorchCallback``: hooks into the harness loop; its ``state_dict`` goes into checkpoints."""

from __future__ import annotations

from typing import Any


class PyTorchCallback:
    """Override any hook; all run on every worker except the ``on_checkpoint_write_end`` (chief)."""

    def on_trial_startup(self, first_batch_idx: int, checkpoint_uuid: str | None) -> None:
        pass

    def on_trial_shutdown(self) -> None:
        pass

    def on_training_start(self) -> None:
        pass

    def on_training_epoch_start(self, epoch_idx: int) -> None:
        pass

    def on_training_epoch_end(self, epoch_idx: int) -> None:
        pass

    def on_training_workload_end(
        self, avg_metrics: dict[str, Any], batch_metrics: list[dict[str, Any]]
    ) -> None:
        pass

    def on_validation_start(self) -> None:
        pass

    def on_validation_epoch_start(self) -> None:
        pass

    def on_validation_epoch_end(self, outputs: list[Any]) -> None:
        pass

    def on_validation_end(self, metrics: dict[str, Any]) -> None:
        pass

    def on_checkpoint_load_start(self, checkpoint: dict[str, Any]) -> None:
        pass

    def on_checkpoint_save_start(self, checkpoint: dict[str, Any]) -> None:
        pass

    def on_checkpoint_end(self, checkpoint_dir: str) -> None:
        """Deprecated: use on_checkpoint_write_end."""

    def on_checkpoint_write_end(self, checkpoint_dir: str) -> None:
        pass

    def on_checkpoint_upload_end(self, uuid: str) -> None:
        pass

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        pass
