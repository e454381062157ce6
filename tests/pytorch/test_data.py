"""DataLoader chain repeat -> shard -> skip, shuffling and its resume pins, units, data_length."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from torch.utils.data import TensorDataset  # noqa: E402

from trialkit import pytorch  # noqa: E402
from trialkit.pytorch import samplers  # noqa: E402
from trialkit.pytorch._samplers import find_shuffle_sampler  # noqa: E402


def _ids(n: int) -> TensorDataset:
    return TensorDataset(torch.arange(n))


def _take(loader: torch.utils.data.DataLoader, k: int) -> list[list[int]]:
    return [b[0].tolist() for b in itertools.islice(iter(loader), k)]


def _iter_take(it: Iterator[Any], k: int) -> list[list[int]]:
    return [b[0].tolist() for b in itertools.islice(it, k)]


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 40),
    bs=st.integers(1, 7),
    replicas=st.integers(1, 3),
    skip=st.integers(0, 25),
    shuffle=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_skip_continues_exactly_where_an_uninterrupted_rank_would_be(
    n: int, bs: int, replicas: int, skip: int, shuffle: bool, seed: int
) -> None:
    """What a checkpoint at ``skip`` keeps (the global RNG and the recent passes' shuffle
    seeds) makes the resumed loader go on with the uninterrupted one's batches."""
    dl = pytorch.DataLoader(_ids(n), batch_size=bs, shuffle=shuffle)
    for rank in range(replicas):
        torch.manual_seed(seed)  # ranks are seeded alike
        full_loader = dl.get_data_loader(repeat=True, num_replicas=replicas, rank=rank)
        it = iter(full_loader)
        _iter_take(it, skip)
        rng = torch.random.get_rng_state()
        sampler = find_shuffle_sampler(full_loader.batch_sampler)
        pins = dict(sampler.seeds) if sampler is not None else None
        full = _iter_take(it, 5)
        torch.manual_seed(seed + 1)  # the resumed process starts elsewhere
        resumed_loader = dl.get_data_loader(
            repeat=True, skip=skip, num_replicas=replicas, rank=rank, shuffle_seeds=pins
        )
        resumed_it = iter(resumed_loader)
        torch.random.set_rng_state(rng)  # the harness restores the RNG after building it
        assert _iter_take(resumed_it, 5) == full


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(1, 50),
    bs=st.integers(1, 6),
    replicas=st.integers(1, 4),
    seed=st.integers(0, 1000),
)
def test_shards_partition_one_pass(n: int, bs: int, replicas: int, seed: int) -> None:
    dl = pytorch.DataLoader(_ids(n), batch_size=bs, shuffle=True)
    seen = []
    for rank in range(replicas):
        torch.manual_seed(seed)  # every rank's global RNG is seeded alike
        loader = dl.get_data_loader(num_replicas=replicas, rank=rank)
        batches = [b[0].tolist() for b in loader]
        assert len(batches) == len(loader)
        seen += [i for b in batches for i in b]
    assert sorted(seen) == list(range(n))


def test_pinned_passes_are_used_and_passes_skipped_whole_draw_nothing() -> None:
    dl = pytorch.DataLoader(_ids(6), batch_size=3, shuffle=True)
    pins = {2: 11, 3: 12}
    torch.manual_seed(0)
    loader = dl.get_data_loader(repeat=True, skip=4, shuffle_seeds=pins)
    it = iter(loader)
    before = torch.random.get_rng_state()
    got = _iter_take(it, 4)  # passes 0-1 skipped, 2 and 3 pinned: no draw
    assert torch.equal(before, torch.random.get_rng_state())
    expected = [
        torch.randperm(6, generator=torch.Generator().manual_seed(s)).tolist() for s in (11, 12)
    ]
    assert got == [expected[0][:3], expected[0][3:], expected[1][:3], expected[1][3:]]
    _iter_take(it, 1)  # pass 4 is not pinned: it draws, as torch's RandomSampler does
    assert not torch.equal(before, torch.random.get_rng_state())


def test_dataloader_argument_checks_and_len() -> None:
    dl = pytorch.DataLoader(_ids(10), batch_size=3, drop_last=True)
    assert len(dl) == 3 and [b[0].tolist() for b in dl][0] == [0, 1, 2]
    with pytest.raises(ValueError, match="mutually exclusive"):
        pytorch.DataLoader(
            _ids(3), sampler=torch.utils.data.SequentialSampler(range(3)), shuffle=True
        )
    with pytest.raises(ValueError, match="batch_size=None"):
        pytorch.DataLoader(_ids(3), batch_size=None)

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):  # type: ignore[no-untyped-def]
            yield 1

    with pytest.raises(ValueError, match="map-style"):
        pytorch.DataLoader(Stream())


def test_distributed_batch_sampler_lengths() -> None:
    base = torch.utils.data.BatchSampler(range(10), 2, False)  # 5 batches
    lens = [len(samplers.DistributedBatchSampler(base, 2, r)) for r in range(2)]
    assert lens == [3, 2]


def test_units() -> None:
    assert pytorch.Batch(3).should_stop(6) and not pytorch.Batch(3).should_stop(4)
    assert not pytorch.Batch(3).should_stop(0)
    assert pytorch.Batch([2, 5]).should_stop(5)
    assert pytorch.TrainUnit._from_values(records=100, global_batch_size=32) == pytorch.Batch(3)
    assert pytorch.TrainUnit._from_values(batches=0) == pytorch.Batch(sys.maxsize)
    assert pytorch.TrainUnit._from_values(epochs=2) == pytorch.Epoch(2)
    with pytest.raises(ValueError, match="global_batch_size"):
        pytorch.TrainUnit._from_values(records=10)


def test_data_length_and_to_device() -> None:
    assert pytorch.data_length({"x": torch.zeros(4, 2)}) == 4
    assert pytorch.data_length((torch.zeros(3),)) == 3
    with pytest.raises(TypeError):
        pytorch.data_length(5)
    with pytest.raises(ValueError):
        pytorch.data_length([])
    out = pytorch.to_device({"a": (torch.ones(1), [torch.zeros(1)]), "s": "keep"}, "cpu")
    assert out["s"] == "keep" and isinstance(out["a"], tuple)
