"""TensorboardMode.AUTO writes reported metrics as TensorBoard event files; decoded here with an
independent TFRecord/protobuf reader."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

from trialkit import core
from trialkit.core._tensorboard import crc32c, masked_crc


def _reference_masked_crc(data: bytes) -> int:
    """TFRecord's masking of the pure-Python CRC-32C, written out independently."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return result, i


def _fields(buf: bytes) -> list[tuple[int, Any]]:
    out, i = [], 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
        elif wire == 1:
            value, i = struct.unpack_from("<d", buf, i)[0], i + 8
        elif wire == 5:
            value, i = struct.unpack_from("<f", buf, i)[0], i + 4
        else:
            n, i = _varint(buf, i)
            value, i = buf[i : i + n], i + n
        out.append((number, value))
    return out


def _records(path: Path) -> list[bytes]:
    data, i, out = path.read_bytes(), 0, []
    while i < len(data):
        header = data[i : i + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[i + 8 : i + 12])[0] == _reference_masked_crc(header)
        body = data[i + 12 : i + 12 + length]
        assert struct.unpack("<I", data[i + 12 + length : i + 16 + length])[
            0
        ] == _reference_masked_crc(body)
        out.append(body)
        i += 16 + length
    return out


def _scalars(path: Path) -> list[tuple[int, str, float]]:
    found = []
    for rec in _records(path):
        event = dict(_fields(rec))
        if 5 not in event:
            assert event[3] == b"brain.Event:2"
            continue
        for number, value in _fields(event[5]):
            assert number == 1
            v = dict(_fields(value))
            found.append((event.get(2, 0), v[1].decode(), v[2]))
    return found


def test_crc32c_known_vector() -> None:
    assert crc32c(b"123456789") == 0xE3069283


def test_the_c_crc_matches_the_reference_on_records_of_every_length() -> None:
    rng = random.Random(7)
    for length in [*range(0, 70), 255, 256, 4097]:
        data = rng.randbytes(length)
        assert masked_crc(data) == _reference_masked_crc(data), length


def test_auto_mode_writes_reported_metrics_as_event_files() -> None:
    with core.init() as ctx:
        ctx.train.report_training_metrics(steps_completed=10, metrics={"loss": 0.5, "note": "text"})
        ctx.train.report_validation_metrics(
            steps_completed=10, metrics={"loss": 0.25, "val_acc": 0.75}
        )
        ctx.train.report_metrics("custom", steps_completed=20, metrics={"lr": 0.125})
        tb_dir = ctx.train.get_tensorboard_path()
    [events] = list(tb_dir.glob("events.out.tfevents.*"))
    assert sorted(_scalars(events)) == [
        (10, "loss", 0.5),
        (10, "val_acc", 0.75),
        (10, "val_loss", 0.25),
        (20, "custom/lr", 0.125),
    ]


def test_manual_mode_writes_nothing() -> None:
    with core.init(tensorboard_mode=core.TensorboardMode.MANUAL) as ctx:
        ctx.train.report_training_metrics(steps_completed=1, metrics={"loss": 1.0})
        tb_dir = ctx.train.get_tensorboard_path()
    assert not list(tb_dir.glob("events.out.tfevents.*"))


def test_only_finite_numbers_become_scalars_and_large_steps_encode(tmp_path: Path) -> None:
    import numpy as np

    from trialkit.core._tensorboard import EventFileWriter

    writer = EventFileWriter(tmp_path)
    writer.write_reports(
        [
            {
                "group": "training",
                "steps_completed": 300_000,  # a multi-byte varint
                "metrics": {
                    "int": 3,
                    "np": np.float32(0.5),
                    "flag": True,
                    "nan": float("nan"),
                    "inf": float("inf"),
                    "text": "x",
                },
            },
            {"group": "training", "steps_completed": 7, "metrics": {"flag": False}},  # no event
        ]
    )
    writer.close()
    [events] = list(tmp_path.glob("events.out.tfevents.*"))
    assert sorted(_scalars(events)) == [(300_000, "int", 3.0), (300_000, "np", 0.5)]


def test_progress_counters_are_not_written_as_metric_cards(tmp_path: Path) -> None:
    """The harnesses add batches/epochs/records to each training and validation report: they
    are progress, not metrics, and must not lead TensorBoard's page as scalar cards."""
    from trialkit.core._tensorboard import EventFileWriter

    counters = {"batches": 40, "epochs": 1, "records": 1280}
    writer = EventFileWriter(tmp_path)
    writer.write_reports(
        [
            {"group": "training", "steps_completed": 40, "metrics": {"loss": 0.5, **counters}},
            {"group": "validation", "steps_completed": 40, "metrics": {"acc": 0.75, **counters}},
        ]
    )
    writer.close()
    [events] = list(tmp_path.glob("events.out.tfevents.*"))
    assert sorted(_scalars(events)) == [(40, "loss", 0.5), (40, "val_acc", 0.75)]
