"""Checkpoints written by Determined's TFKerasTrial (tf.keras 2, TensorFlow <= 2.15), loaded
into tf_keras or Keras 3 (reference §3.2).

Determined's layout: ``determined-keras-model-weights.{index,data-*}`` (``save_weights`` in
TensorFlow's checkpoint format), ``determined-keras-optimizer-weights.h5`` (one
``optimizer-<i>/optimizer_weights`` group per wrapped optimizer, Keras 2's HDF5 optimizer format),
``rng_state.pkl``, ``determined-callbacks.v1.pkl``, ``workload_sequencer.pkl``,
``load_data.json``. Before 0.13.8 a whole-model ``determined-keras-model.h5`` held both weights and
optimizer state. Each model variable is matched to the checkpoint's ``layer_with_weights-<i>/.../<name>`` entry
(TensorFlow reads the file; tf_keras's own ``load_weights`` would also restore the optimizer from
it, and refuses a legacy optimizer's slots in a 2.11+ optimizer).
The optimizer's slots are matched per slot name in trainable-variable order; a state that does
not fit leaves the optimizer fresh with a warning, as Determined does. Not restored:
``rng_state.pkl`` (TensorFlow's global generator; Keras 3 draws from per-layer seed generators)
and ``determined-callbacks.v1.pkl`` (Determined's callback multiplexer state). Determined's own
loader restores both; here they start fresh (QUIRK, deliberate: neither maps onto Keras 3)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger("trialkit.keras")

TF_WEIGHTS = "determined-keras-model-weights"
OPTIMIZER_H5 = "determined-keras-optimizer-weights.h5"
MODEL_H5 = "determined-keras-model.h5"
_VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"

#: Keras 2 optimizer slot names (OptimizerV2 and the 2.11+ optimizers) -> the Keras 3 (and
#: tf_keras 2.11+) optimizer attributes that hold that slot per trainable variable.
_SLOT_ATTRS: dict[str, tuple[str, ...]] = {
    "m": ("_momentums", "_m", "momentums"),
    "v": ("_velocities", "_u"),
    "vhat": ("_velocity_hats",),
    "momentum": ("momentums", "_momentums"),
    "rms": ("_velocities",),
    "velocity": ("_velocities",),
    "mg": ("_average_gradients",),
    "average_gradient": ("_average_gradients",),
    "accumulator": ("_accumulators",),
    "accum_grad": ("_accumulated_grads",),
    "accum_var": ("_accumulated_delta_vars",),
}


def is_determined_layout(path: Path) -> bool:
    """A checkpoint directory in Determined's TFKerasTrial layout (any of its generations)."""
    return (path / f"{TF_WEIGHTS}.index").exists() or (path / MODEL_H5).exists()


def load_determined_checkpoint(model: Any, path: Path, *, optimizer: bool = True) -> None:
    """Load a Determined TFKerasTrial checkpoint's weights (and optimizer state) into ``model``."""
    where = f"Determined checkpoint at {path}"
    if not model.built:
        raise RuntimeError(
            f"{where}: the model is not built, so its weights cannot be restored; give it a "
            "keras.Input (or call model.build)"
        )
    h5 = path / MODEL_H5
    if h5.exists():  # Determined < 0.13.8: the whole model in one HDF5 file
        model.load_weights(str(h5))
        if optimizer:
            _load_optimizer_h5(model, h5, None, where)
        return
    _load_tf_format(model, path / TF_WEIGHTS, where)
    if optimizer and (path / OPTIMIZER_H5).exists():
        _load_optimizer_h5(model, path / OPTIMIZER_H5, "optimizer-0", where)


def _load_tf_format(model: Any, prefix: Path, where: str) -> None:
    try:
        import tensorflow as tf
    except ImportError:
        raise RuntimeError(
            f"{where}: its weights are in TensorFlow's checkpoint format; install tensorflow "
            "to read them"
        ) from None
    reader = tf.train.load_checkpoint(str(prefix))
    shapes = {
        k[: -len(_VALUE)]: tuple(s)
        for k, s in reader.get_variable_to_shape_map().items()
        if k.endswith(_VALUE) and ".OPTIMIZER_SLOT" not in k and not k.startswith("optimizer/")
        and k != f"save_counter{_VALUE}"
    }  # fmt: skip
    used: set[str] = set()
    assign: list[tuple[Any, str]] = []
    weighted = [layer for layer in model.layers if layer.weights]
    for i, layer in enumerate(weighted):
        head = f"layer_with_weights-{i}/"
        for var in layer.weights:
            name = var.name.split(":")[0].rsplit("/", 1)[-1]
            found = [
                k
                for k, s in shapes.items()
                if k.startswith(head) and k.rsplit("/", 1)[-1] == name
                and s == tuple(var.shape) and k not in used
            ]  # fmt: skip
            if len(found) != 1:
                raise RuntimeError(
                    f"{where}: found {len(found)} entries for {getattr(var, 'path', var.name)} "
                    f"(layer {layer.name!r}, {tuple(var.shape)}) under {head}; the model does not "
                    "match the one that wrote the checkpoint"
                )
            used.add(found[0])
            assign.append((var, found[0]))
    left = sorted(set(shapes) - used)
    if left:
        raise RuntimeError(
            f"{where}: {len(left)} checkpoint weight(s) have no place in the model, e.g. "
            f"{left[0]}; the model does not match the one that wrote the checkpoint"
        )
    for var, key in assign:
        var.assign(reader.get_tensor(key + _VALUE))


def _read_optimizer_h5(file: Path, group: str | None) -> tuple[list[str], list[Any]]:
    import h5py
    import numpy as np

    with h5py.File(file, "r") as f:
        node = f[group] if group is not None and group in f else f
        if "optimizer_weights" not in node:
            return [], []
        weights = node["optimizer_weights"]
        names = [
            n.decode() if isinstance(n, bytes) else str(n) for n in weights.attrs["weight_names"]
        ]
        return names, [np.asarray(weights[n][()]) for n in names]


def _slots(names: list[str], values: list[Any]) -> tuple[Any, dict[str, list[Any]]]:
    """(iteration count, slot name -> values in trainable-variable order) from Keras 2's names:
    ``Adam/iter``, ``Adam/<var>/m`` (OptimizerV2) or ``iteration``, ``Adam/m/<var>`` (2.11+)."""
    iteration = None
    slots: dict[str, list[Any]] = {}
    new_style = bool(names) and "/" not in names[0].split(":")[0]
    for name, value in zip(names, values, strict=True):
        parts = name.split(":")[0].split("/")
        if parts[-1] in ("iter", "iteration", "iterations"):
            iteration = value
            continue
        if value.ndim == 0:  # per-optimizer scalars (e.g. Nadam's momentum_cache): not state here
            continue
        slot = parts[1] if new_style and len(parts) > 2 else parts[-1]
        slots.setdefault(slot, []).append(value)
    return iteration, slots


def _slot_variables(optimizer: Any, slot: str, variables: list[Any]) -> list[Any] | None:
    if hasattr(optimizer, "get_slot") and hasattr(optimizer, "_create_all_weights"):
        optimizer._create_all_weights(variables)  # tf_keras's OptimizerV2 (the legacy optimizers)
        try:
            return [optimizer.get_slot(v, slot) for v in variables]
        except KeyError:
            return None
    attrs = _SLOT_ATTRS.get(slot, ())
    if not any(getattr(optimizer, a, None) for a in attrs) and variables:
        optimizer.build(variables)  # not built yet: its slot lists appear now
    for attr in attrs:
        found = getattr(optimizer, attr, None)
        if isinstance(found, list) and len(found) == len(variables):
            return found
    return None


def _load_optimizer_h5(model: Any, file: Path, group: str | None, where: str) -> None:
    optimizer = getattr(model, "optimizer", None)
    names, values = _read_optimizer_h5(file, group)
    if optimizer is None or not names:
        return
    variables = list(model.trainable_variables)
    iteration, slots = _slots(names, values)
    plan: list[tuple[Any, Any]] = []
    for slot, saved in slots.items():
        targets = _slot_variables(optimizer, slot, variables)
        problem = (
            f"the optimizer has no {slot!r} slot per trainable variable"
            if targets is None
            else f"{len(saved)} {slot!r} values for {len(targets)} variables"
            if len(saved) != len(targets)
            else next(
                (
                    f"{slot!r} of {getattr(t, 'path', t.name)}: saved {s.shape}, model {tuple(t.shape)}"
                    for t, s in zip(targets, saved, strict=True)
                    if tuple(t.shape) != s.shape
                ),
                None,
            )
        )
        if problem:
            logger.warning(
                "%s: optimizer state not restored (%s); the optimizer starts fresh", where, problem
            )
            return
        assert targets is not None
        plan.extend(zip(targets, saved, strict=True))
    for target, value in plan:
        target.assign(value)
    if iteration is not None:
        optimizer.iterations.assign(int(iteration))
