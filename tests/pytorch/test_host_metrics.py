"""Training metrics go from tensors to Python values a reporting period at a time: the values
``.item()`` and ``.tolist()`` give, without one ``.item()`` (on a GPU, one wait for the device)
per batch and metric."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from trialkit.pytorch.shared import detached, metrics_to_python  # noqa: E402


class _CountOps(TorchDispatchMode):
    """Counts the aten ops run under it, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = func.overloadpacket.__name__
        self.counts[name] = self.counts.get(name, 0) + 1
        return func(*args, **(kwargs or {}))


def _batches(n: int) -> list[dict[str, Any]]:
    g = torch.Generator().manual_seed(0)
    return [
        {
            "loss": torch.rand((), generator=g),
            "half": torch.rand((), generator=g).to(torch.bfloat16),
            "fp16": torch.rand((1,), generator=g).to(torch.float16),
            "count": torch.tensor(i, dtype=torch.int64),
            "flag": torch.tensor(i % 2 == 0),
            "vector": torch.arange(3.0) * i,
            "np": np.float32(0.25 * i),
            "plain": 1.5,
            "name": "x",
            "none": None,
        }
        for i in range(n)
    ]


def _one_at_a_time(batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def value(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return v.item() if v.numel() == 1 else v.tolist()
        return v.item() if isinstance(v, np.generic) else v

    return [{k: value(v) for k, v in m.items()} for m in batches]


def test_the_values_and_their_types_are_those_of_item_and_tolist() -> None:
    batches = _batches(5)
    got = metrics_to_python(batches)
    want = _one_at_a_time(batches)
    assert got == want
    for g, w in zip(got, want, strict=True):
        assert {k: type(v) for k, v in g.items()} == {k: type(v) for k, v in w.items()}
    assert type(got[0]["count"]) is int and type(got[0]["flag"]) is bool
    assert got[3]["vector"] == [0.0, 3.0, 6.0]


def test_the_batches_given_are_left_as_they_were() -> None:
    batches = _batches(2)
    loss = batches[1]["loss"]
    metrics_to_python(batches)
    assert batches[1]["loss"] is loss


def test_a_period_is_copied_in_one_stack_per_dtype_not_one_item_per_batch() -> None:
    batches = _batches(100)
    with _CountOps() as ops:
        metrics_to_python(batches)
    assert ops.counts.get("_local_scalar_dense", 0) == 0, ops.counts  # what .item() runs
    assert ops.counts["stack"] == 5, ops.counts  # float32, bfloat16, float16, int64, bool


def test_a_loss_still_in_its_graph_is_cut_from_it() -> None:
    w = torch.ones((), requires_grad=True)
    loss = w * 3
    batch = detached({"loss": loss, "n": 2})
    assert not batch["loss"].requires_grad and batch["n"] == 2
    (got,) = metrics_to_python([{"loss": w * 2}])
    assert got == {"loss": 2.0}


def test_no_batches_and_batches_without_tensors() -> None:
    assert metrics_to_python([]) == []
    assert metrics_to_python([{}, {"a": 1}]) == [{}, {"a": 1}]
