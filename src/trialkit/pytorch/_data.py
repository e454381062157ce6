"""``DataLoader``: a lazy spec of a torch DataLoader that the harness turns into the
repeat -> shard -> skip chain, plus ``data_length`` and ``to_device``."""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import torch
from torch.utils.data import BatchSampler, Dataset, IterableDataset, SequentialSampler

from ._samplers import TorchRandomSampler, adapt_batch_sampler

logger = logging.getLogger("trialkit.pytorch")

TorchData = dict[str, torch.Tensor] | list[torch.Tensor] | tuple[torch.Tensor, ...] | torch.Tensor


class DataLoader:
    """Takes torch.utils.data.DataLoader's arguments; the harness builds the real loader.

    ``shuffle=True`` orders records as Determined does (torch's ``RandomSampler``: each pass's
    permutation seeded by a draw from the global torch RNG, which the trial seed seeded), and the
    harness keeps the seed of the pass in progress in checkpoints, so a resumed run continues on
    the uninterrupted run's order.
    """

    def __init__(
        self,
        dataset: Dataset[Any],
        batch_size: int | None = 1,
        shuffle: bool = False,
        sampler: Any = None,
        batch_sampler: Any = None,
        num_workers: int = 0,
        collate_fn: Callable[..., Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: torch.Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
    ) -> None:
        if isinstance(dataset, IterableDataset):
            raise ValueError(
                "trialkit.pytorch.DataLoader needs a map-style Dataset (IterableDataset cannot "
                "be sharded or skipped); call context.experimental.disable_dataset_reproducibility_checks() "
                "and return a torch DataLoader instead"
            )
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
        elif batch_size is None:
            raise ValueError("DataLoader(batch_size=None) needs a batch_sampler")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        self.dataset = dataset
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.drop_last = drop_last
        self.generator = generator
        self._loader_kwargs: dict[str, Any] = {
            "num_workers": num_workers,
            "collate_fn": collate_fn,
            "pin_memory": pin_memory,
            "timeout": timeout,
            "worker_init_fn": worker_init_fn,
            "multiprocessing_context": multiprocessing_context,
            "prefetch_factor": prefetch_factor,
            "persistent_workers": persistent_workers,
        }

    def _base_batch_sampler(self, pinned: Mapping[int, int] | None = None) -> Any:
        if self.batch_sampler is not None:
            return self.batch_sampler
        sampler = self.sampler
        if sampler is None:
            if self.shuffle and self.generator is None:
                sampler = TorchRandomSampler(self.dataset, pinned)  # type: ignore[arg-type]
            elif self.shuffle:
                sampler = torch.utils.data.RandomSampler(self.dataset, generator=self.generator)  # type: ignore[arg-type]
            else:
                sampler = SequentialSampler(self.dataset)  # type: ignore[arg-type]
        return BatchSampler(sampler, self.batch_size, self.drop_last)  # type: ignore[arg-type]

    def __len__(self) -> int:
        """Batches in one unsharded pass."""
        return len(self._base_batch_sampler())

    def __iter__(self) -> Iterator[Any]:
        return iter(self.get_data_loader())

    def get_data_loader(
        self,
        repeat: bool = False,
        skip: int = 0,
        num_replicas: int = 1,
        rank: int = 0,
        *,
        seed: int = 0,
        shuffle_seeds: Mapping[int, int] | None = None,
    ) -> torch.utils.data.DataLoader[Any]:
        """The real loader: repeat -> shard -> skip, built as Determined builds it (iterating
        it draws from the global torch RNG, or from ``generator``, as torch's loader does).
        ``shuffle_seeds`` pins passes' shuffle seeds ({pass: seed}, from a checkpoint);
        ``seed`` is accepted for older callers and unused."""
        chain = adapt_batch_sampler(
            self._base_batch_sampler(shuffle_seeds),
            repeat=repeat,
            skip=skip,
            num_replicas=num_replicas,
            rank=rank,
        )
        kwargs = {k: v for k, v in self._loader_kwargs.items() if v is not None}
        return torch.utils.data.DataLoader(
            self.dataset, batch_sampler=chain, generator=self.generator, **kwargs
        )


def data_length(data: Any) -> int:
    """Records in a batch: the length of its first tensor/array leaf."""
    if isinstance(data, (torch.Tensor, np.ndarray)):
        return int(data.shape[0])
    if isinstance(data, dict):
        if not data:
            raise ValueError("data_length: empty dict")
        return data_length(next(iter(data.values())))
    if isinstance(data, (list, tuple)):
        if not data:
            raise ValueError("data_length: empty sequence")
        first = data[0]
        return int(first.shape[0]) if type(first) is torch.Tensor else data_length(first)
    raise TypeError(
        f"data_length: cannot measure a {type(data).__name__}; override get_batch_length()"
    )


def to_device(data: Any, device: torch.device | str, warned_types: set[type] | None = None) -> Any:
    """Move tensors (nested in dicts, lists, tuples) to ``device``; numpy arrays become tensors.
    Containers whose leaves are all in place come back as they are (no copy per batch).

    A value that cannot move is returned as it is, with a warning once per type: per call when
    ``warned_types`` is None, else once per type across the calls sharing that set (Determined's
    rule; the harness shares one set per trial)."""
    warned = set() if warned_types is None else warned_types
    if isinstance(device, str):
        device = torch.device(device)
    return _to_device(data, device, warned)


def _in_place(values: Iterable[Any], device: torch.device) -> bool:
    """Whether every value is a tensor already on ``device``: the usual batch, checked in a
    plain loop before any moved copy is built (bench/README.md: to-device-in-place)."""
    for v in values:
        if type(v) is not torch.Tensor or v.device != device:
            return False
    return True


def _to_device(data: Any, device: torch.device, warned: set[type]) -> Any:
    if isinstance(data, torch.Tensor):
        return data if data.device == device else data.to(device)
    if isinstance(data, dict):
        if _in_place(data.values(), device):
            return data
        moved_items = {k: _to_device(v, device, warned) for k, v in data.items()}
        return data if all(map(operator.is_, moved_items.values(), data.values())) else moved_items
    if isinstance(data, (list, tuple)):
        if _in_place(data, device):
            return data
        moved = [_to_device(v, device, warned) for v in data]
        if all(map(operator.is_, moved, data)):
            return data
        if isinstance(data, tuple) and hasattr(data, "_fields"):
            return type(data)(*moved)
        return type(data)(moved)
    if isinstance(data, np.ndarray) and data.dtype.kind in "fciub":
        return torch.from_numpy(data).to(device)
    if callable(getattr(data, "to", None)):
        return data.to(device)
    if type(data) not in warned:
        warned.add(type(data))
        logger.warning(
            "Was not able to move data item of type '%s' to device.", type(data).__name__
        )
    return data
