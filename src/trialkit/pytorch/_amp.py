"""Mixed precision for PyTorchTrialContext: torch.amp (``wrap_scaler``,
``experimental.use_amp()``) and the deprecated NVIDIA apex entry point."""

from __future__ import annotations

import functools
from typing import Any

import torch

from ._runtime import PyTorchRuntime


def _cast_to_fp32(out: Any) -> Any:
    if isinstance(out, torch.Tensor):
        return out.float() if out.dtype in (torch.float16, torch.bfloat16) else out
    if isinstance(out, dict):
        return {k: _cast_to_fp32(v) for k, v in out.items()}
    if isinstance(out, (list, tuple)):
        return type(out)(_cast_to_fp32(v) for v in out)
    return out


class AmpMixin:
    """AMP calls; the context supplies ``models``, ``device``, ``runtime`` (which holds the
    scaler and whether the harness steps it) and ``_apex_used``."""

    models: list[torch.nn.Module]
    device: torch.device
    runtime: PyTorchRuntime
    _apex_used: bool
    _amp_dtype: torch.dtype | None = None

    def _autocast_forward(self, model: torch.nn.Module) -> None:
        forward = model.forward
        device_type, dtype = self.device.type, self._amp_dtype

        @functools.wraps(forward)
        def amp_forward(*args: Any, **kwargs: Any) -> Any:
            with torch.autocast(device_type=device_type, dtype=dtype):
                return _cast_to_fp32(forward(*args, **kwargs))

        model.forward = amp_forward  # type: ignore[method-assign]

    def wrap_scaler(self, scaler: Any) -> Any:
        """Register a torch.amp.GradScaler for checkpointing; you scale, unscale and update it."""
        if self.runtime.scaler is not None:
            raise RuntimeError("wrap_scaler() may be called once (use_amp() already calls it)")
        if self._apex_used:
            raise RuntimeError("wrap_scaler() cannot be combined with configure_apex_amp()")
        self.runtime.scaler = scaler
        return scaler

    def _use_auto_amp(self) -> None:
        if self.models:
            raise RuntimeError("experimental.use_amp() must be called before wrap_model()")
        if self.device.type == "cuda":
            self.wrap_scaler(torch.amp.GradScaler("cuda"))
            self._amp_dtype = torch.float16
        else:
            self._amp_dtype = torch.bfloat16
        self.runtime.auto_amp = True

    def configure_apex_amp(
        self,
        models: Any,
        optimizers: Any,
        enabled: bool = True,
        opt_level: str = "O1",
        **kwargs: Any,
    ) -> tuple[Any, Any]:
        """Deprecated NVIDIA apex AMP; needs apex and CUDA. Prefer experimental.use_amp()."""
        if not enabled:
            return models, optimizers
        missing = []
        try:
            from apex import amp  # type: ignore[import-not-found]
        except ImportError:
            amp = None
            missing.append("NVIDIA apex is not installed")
        if not torch.cuda.is_available():
            missing.append("CUDA is not available")
        if missing:
            raise RuntimeError(
                "configure_apex_amp(): "
                + " and ".join(missing)
                + "; use context.experimental.use_amp() (torch.amp) instead"
            )
        if self.runtime.scaler is not None:
            raise RuntimeError(
                "configure_apex_amp() cannot be combined with wrap_scaler()/use_amp()"
            )
        self._apex_used = True
        return amp.initialize(models, optimizers, enabled=True, opt_level=opt_level, **kwargs)  # type: ignore[no-any-return]
