"""TensorboardMode, and a dependency-free TensorBoard event-file writer for AUTO mode.

Event files are TFRecord files of ``Event`` protocol buffers; scalars need only a handful of
fields, so they are encoded by hand here instead of pulling in tensorboard or protobuf.
"""

from __future__ import annotations

import enum
import functools
import math
import os
import socket
import struct
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import google_crc32c


class TensorboardMode(enum.Enum):
    """AUTO: trialkit writes reported metrics as event files; MANUAL: the user writes and uploads."""

    AUTO = "AUTO"
    MANUAL = "MANUAL"


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum TFRecord uses, in Python: the reference the fast
    one (``google_crc32c``, in C) is tested against."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC-32C of ``data``. (In C: every trial writes an event per report;
    bench/README.md: tensorboard-crc.)"""
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(n: int) -> bytes:
    if 0 <= n < 0x80:
        return _SMALL[n]
    out = bytearray()
    n &= 0xFFFFFFFFFFFFFFFF
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_SMALL = [bytes((i,)) for i in range(0x80)]
_F32 = struct.Struct("<f").pack
_F64 = struct.Struct("<d").pack
_U32 = struct.Struct("<I").pack
_U64 = struct.Struct("<Q").pack


def _field_bytes(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


@functools.lru_cache(maxsize=4096)
def _value_prefix(tag: str) -> bytes:
    """Summary.value's bytes up to its float: length-delimited header, tag, simple_value key
    (the same for every report of a tag, so built once)."""
    inner = _field_bytes(1, tag.encode()) + _varint(2 << 3 | 5)
    return _varint(1 << 3 | 2) + _varint(len(inner) + 4) + inner


def _scalar_event(wall_time: float, step: int, values: Iterable[tuple[str, float]]) -> bytes:
    summary = b"".join(_value_prefix(tag) + _F32(v) for tag, v in values)
    return b"".join(
        (b"\x09", _F64(wall_time), b"\x10", _varint(step), b"\x2a", _varint(len(summary)), summary)
    )


def _version_event(wall_time: float) -> bytes:
    return _varint(1 << 3 | 1) + struct.pack("<d", wall_time) + _field_bytes(3, b"brain.Event:2")


#: The harnesses' progress counters, added to every training and validation report: not
#: written as scalar cards (they led TensorBoard's page; the step axis already counts batches).
_PROGRESS = frozenset({"batches", "epochs", "records"})


@functools.lru_cache(maxsize=4096)
def _tag(group: str, name: str) -> str:
    if group == "training":
        return name
    if group == "validation":
        return name if name.startswith("val") else f"val_{name}"
    return f"{group}/{name}"


def _scalars(group: str, metrics: Mapping[str, Any]) -> list[tuple[str, float]]:
    out = []
    counters = group in ("training", "validation")
    for name, value in metrics.items():
        if counters and name in _PROGRESS:
            continue
        t = type(value)
        if t is float or t is int:  # exact types first: this runs for every reported metric
            if value - value == 0:
                out.append((_tag(group, name), float(value)))
        elif (number := _number(value)) is not None:
            out.append((_tag(group, name), number))
    return out


def _number(value: Any) -> float | None:
    """A finite float from a numpy/torch scalar or number subclass; None for anything else."""
    if isinstance(value, bool):
        return None
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) in ((), None):
        value = item()
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


class EventFileWriter:
    """Appends scalar metrics to ``<logdir>/events.out.tfevents.<time>.<host>``."""

    def __init__(self, logdir: Path) -> None:
        logdir.mkdir(parents=True, exist_ok=True)
        now = time.time()
        self.path = logdir / f"events.out.tfevents.{int(now)}.{socket.gethostname()}.{os.getpid()}"
        self._file: BinaryIO = open(self.path, "ab")
        self._write_all([_version_event(now)])

    def _write_all(self, events: list[bytes]) -> None:
        records: list[bytes] = []
        for event in events:
            header = _U64(len(event))
            records += (header, _U32(masked_crc(header)), event, _U32(masked_crc(event)))
        self._file.write(b"".join(records))

    def write_reports(self, reports: Iterable[Mapping[str, Any]]) -> None:
        """Write the numeric values of metric reports {group, steps_completed, metrics}."""
        now = time.time()
        events = []
        for r in reports:
            values = _scalars(r["group"], r["metrics"])
            if values:
                events.append(_scalar_event(now, int(r["steps_completed"]), values))
        if events:
            self._write_all(events)
            self._file.flush()

    def close(self) -> None:
        self._file.close()
