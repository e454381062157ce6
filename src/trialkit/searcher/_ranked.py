"""A sorted list of (value, id) with O(log n) rank, position lookup and amortized cheap inserts.

Entries live in sorted blocks of at most ``2 * load`` items; a Fenwick tree over block sizes
turns a position into (block, offset) and a block into its starting rank. Inserting costs
O(log n + load); splitting a full block rebuilds the tree, once per ``load`` inserts.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

DEFAULT_LOAD = 256


class RankedList:
    """Values kept ascending, each with the id of the trial that reported it."""

    def __init__(self, load: int = DEFAULT_LOAD) -> None:
        self._load = load
        self._values: list[list[float]] = []
        self._ids: list[list[str]] = []
        self._maxes: list[float] = []
        self._tree: list[int] = [0]
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def insert(self, value: float, item: str, *, before_equals: bool) -> int:
        """Insert ahead of (or behind) equal values; return the new entry's index."""
        if not self._values:
            self._values, self._ids, self._maxes = [[value]], [[item]], [value]
            self._size = 1
            self._rebuild()
            return 0
        find = bisect.bisect_left if before_equals else bisect.bisect_right
        block = min(find(self._maxes, value), len(self._maxes) - 1)
        offset = find(self._values[block], value)
        rank = self._prefix(block) + offset
        self._values[block].insert(offset, value)
        self._ids[block].insert(offset, item)
        self._maxes[block] = self._values[block][-1]
        self._size += 1
        self._add(block, 1)
        if len(self._values[block]) > 2 * self._load:
            self._split(block)
        return rank

    def id_at(self, index: int) -> str:
        """The id of the entry at ``index`` (0 = best)."""
        block, offset = self._locate(index)
        return self._ids[block][offset]

    def remove(self, item: str) -> bool:
        """Drop the entry of ``item`` (a linear scan; used only for InvalidHP trials)."""
        for block, ids in enumerate(self._ids):
            if item in ids:
                offset = ids.index(item)
                del self._values[block][offset], ids[offset]
                self._size -= 1
                if ids:
                    self._maxes[block] = self._values[block][-1]
                    self._add(block, -1)
                else:
                    del self._values[block], self._ids[block], self._maxes[block]
                    self._rebuild()
                return True
        return False

    def values(self) -> list[float]:
        """All values, ascending."""
        return [v for block in self._values for v in block]

    def ids(self) -> list[str]:
        """All ids, in value order."""
        return [i for block in self._ids for i in block]

    def __iter__(self) -> Iterator[tuple[float, str]]:
        for values, ids in zip(self._values, self._ids, strict=True):
            yield from zip(values, ids, strict=True)

    def reset(self, values: list[float], ids: list[str]) -> None:
        """Replace the contents with already-sorted entries."""
        self._values = [values[i : i + self._load] for i in range(0, len(values), self._load)]
        self._ids = [ids[i : i + self._load] for i in range(0, len(ids), self._load)]
        self._maxes = [block[-1] for block in self._values]
        self._size = len(values)
        self._rebuild()

    # -- block bookkeeping --------------------------------------------------------------------

    def _split(self, block: int) -> None:
        half = len(self._values[block]) // 2
        self._values.insert(block + 1, self._values[block][half:])
        self._ids.insert(block + 1, self._ids[block][half:])
        del self._values[block][half:], self._ids[block][half:]
        self._maxes[block] = self._values[block][-1]
        self._maxes.insert(block + 1, self._values[block + 1][-1])
        self._rebuild()

    def _rebuild(self) -> None:
        """Fenwick tree (1-based) over block sizes, built in O(#blocks)."""
        tree = [0] + [len(block) for block in self._values]
        for i in range(1, len(tree)):
            parent = i + (i & -i)
            if parent < len(tree):
                tree[parent] += tree[i]
        self._tree = tree

    def _add(self, block: int, delta: int) -> None:
        i = block + 1
        while i < len(self._tree):
            self._tree[i] += delta
            i += i & -i

    def _prefix(self, block: int) -> int:
        """Entries in blocks before ``block``."""
        total, i = 0, block
        while i > 0:
            total += self._tree[i]
            i -= i & -i
        return total

    def _locate(self, index: int) -> tuple[int, int]:
        if not 0 <= index < self._size:
            raise IndexError(index)
        position, step = 0, 1 << (len(self._tree) - 1).bit_length()
        while step:
            nxt = position + step
            if nxt < len(self._tree) and self._tree[nxt] <= index:
                position = nxt
                index -= self._tree[nxt]
            step >>= 1
        return position, index
