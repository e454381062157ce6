"""Determined's sampler names under trialkit.pytorch.samplers, with Determined's semantics:
the same indices, pass after pass, for the same seed (reference §2.7)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils.data import BatchSampler, SequentialSampler  # noqa: E402

from trialkit.pytorch import samplers  # noqa: E402


def _determined_shuffles(items: list, seed: int, passes: int) -> list[list]:
    """Determined's rule, written out: one RandomState(seed), one in-place shuffle per pass."""
    rng = np.random.RandomState(seed)
    out = []
    for _ in range(passes):
        xs = list(items)
        rng.shuffle(xs)
        out.append(xs)
    return out


@pytest.mark.parametrize("seed", [0, 7, 12345])
def test_reproducible_shuffle_sampler_matches_determined(seed: int) -> None:
    sampler = samplers.ReproducibleShuffleSampler(SequentialSampler(range(23)), seed)
    got = [list(sampler) for _ in range(3)]
    assert got == _determined_shuffles(list(range(23)), seed, 3)
    assert len(sampler) == 23 and sorted(got[0]) == list(range(23))
    assert got[0] != got[1]  # a new shuffle each pass, from the same generator


@pytest.mark.parametrize("seed", [0, 7])
def test_reproducible_shuffle_batch_sampler_matches_determined(seed: int) -> None:
    base = BatchSampler(SequentialSampler(range(10)), 3, False)
    sampler = samplers.ReproducibleShuffleBatchSampler(base, seed)
    got = [list(sampler) for _ in range(2)]
    assert got == _determined_shuffles(list(base), seed, 2)
    assert len(sampler) == 4


def test_the_chain_shuffle_skip_repeat_as_in_determined() -> None:
    """'Shuffle before skip, skip before repeat': a record-level chain a user builds."""
    shuffled = samplers.ReproducibleShuffleSampler(SequentialSampler(range(8)), 3)
    chain = samplers.RepeatSampler(samplers.SkipSampler(shuffled, 5))
    first_three_passes = _determined_shuffles(list(range(8)), 3, 3)
    expected = [x for p in first_three_passes for x in p[5:]]
    assert list(itertools.islice(chain, len(expected))) == expected
    assert len(chain) == 8


def test_distributed_sampler_shares_items_round_robin() -> None:
    shards = [list(samplers.DistributedSampler(range(7), 3, r)) for r in range(3)]
    assert shards == [[0, 3, 6], [1, 4], [2, 5]]
    assert [len(samplers.DistributedSampler(range(7), 3, r)) for r in range(3)] == [3, 2, 2]
    with pytest.raises(ValueError, match="rank 3 outside"):
        samplers.DistributedSampler(range(7), 3, 3)


def test_distributed_batch_sampler_takes_determined_and_trialkit_argument_names() -> None:
    base = BatchSampler(SequentialSampler(range(10)), 2, False)
    a = samplers.DistributedBatchSampler(base, num_workers=2, rank=1)
    b = samplers.DistributedBatchSampler(base, num_replicas=2, rank=1)
    assert list(a) == list(b) == [[2, 3], [6, 7]]
    assert a.num_workers == a.num_replicas == 2


def test_skip_past_the_end_yields_nothing() -> None:
    base = BatchSampler(SequentialSampler(range(4)), 2, False)
    assert list(samplers.SkipBatchSampler(base, 5)) == []
    assert list(samplers.SkipSampler(range(3), 9)) == []
    assert len(samplers.SkipBatchSampler(base, 5)) == 2


def test_adapt_batch_sampler_repeat_shard_skip() -> None:
    base = BatchSampler(SequentialSampler(range(10)), 2, False)  # 5 batches
    chain = samplers.adapt_batch_sampler(base, repeat=True, skip=2, num_replicas=2, rank=1)
    # Repeated, the global batches are b0..b4 b0..b4 ...; rank 1 takes every second one
    # (b1 b3 b0 b2 b4 b1 ...) and skips its first two.
    got = list(itertools.islice(iter(chain), 4))
    assert got == [[0, 1], [4, 5], [8, 9], [2, 3]]
    loader = torch.utils.data.DataLoader(range(10), batch_sampler=chain)
    assert next(iter(loader)).tolist() == [0, 1]


def test_every_determined_sampler_name_exists() -> None:
    for name in (
        "SkipSampler",
        "RepeatSampler",
        "DistributedSampler",
        "ReproducibleShuffleSampler",
        "SkipBatchSampler",
        "RepeatBatchSampler",
        "DistributedBatchSampler",
        "ReproducibleShuffleBatchSampler",
        "adapt_batch_sampler",
    ):
        assert name in samplers.__all__ and callable(getattr(samplers, name))
