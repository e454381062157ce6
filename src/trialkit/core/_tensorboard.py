"""TensorboardMode, and a dependency-free TensorBoard event-file writer for AUTO mode.

Event files are TFRecord files of ``Event`` protocol buffers; scalars need only a handful of
fields, so they are encoded by hand here instead of pulling in tensorboard or protobuf.
"""

from __future__ import annotations

import enum
import math
import os
import socket
import struct
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO


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
    """CRC-32C (Castagnoli), the checksum TFRecord uses."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(n: int) -> bytes:
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


def _field_bytes(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _scalar_event(wall_time: float, step: int, values: Iterable[tuple[str, float]]) -> bytes:
    summary = b"".join(
        _field_bytes(1, _field_bytes(1, tag.encode()) + _varint(2 << 3 | 5) + struct.pack("<f", v))
        for tag, v in values
    )
    return (
        _varint(1 << 3 | 1)
        + struct.pack("<d", wall_time)
        + _varint(2 << 3)
        + _varint(step)
        + _field_bytes(5, summary)
    )


def _version_event(wall_time: float) -> bytes:
    return _varint(1 << 3 | 1) + struct.pack("<d", wall_time) + _field_bytes(3, b"brain.Event:2")


def _tag(group: str, name: str) -> str:
    if group == "training":
        return name
    if group == "validation":
        return name if name.startswith("val") else f"val_{name}"
    return f"{group}/{name}"


def _scalars(group: str, metrics: Mapping[str, Any]) -> list[tuple[str, float]]:
    out = []
    for name, value in metrics.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            out.append((_tag(group, name), float(value)))
    return out


class EventFileWriter:
    """Appends scalar metrics to ``<logdir>/events.out.tfevents.<time>.<host>``."""

    def __init__(self, logdir: Path) -> None:
        logdir.mkdir(parents=True, exist_ok=True)
        now = time.time()
        self.path = logdir / f"events.out.tfevents.{int(now)}.{socket.gethostname()}.{os.getpid()}"
        self._file: BinaryIO = open(self.path, "ab")
        self._write(_version_event(now))

    def _write(self, data: bytes) -> None:
        header = struct.pack("<Q", len(data))
        self._file.write(
            header
            + struct.pack("<I", masked_crc(header))
            + data
            + struct.pack("<I", masked_crc(data))
        )

    def write_reports(self, reports: Iterable[Mapping[str, Any]]) -> None:
        """Write the numeric values of metric reports {group, steps_completed, metrics}."""
        now = time.time()
        for r in reports:
            values = _scalars(r["group"], r["metrics"])
            if values:
                self._write(_scalar_event(now, int(r["steps_completed"]), values))
        self._file.flush()

    def close(self) -> None:
        self._file.close()
