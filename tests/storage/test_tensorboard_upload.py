"""``upload_tensorboard_files`` with object-store checkpoint storage (every backend's real
server): the files land under ``tensorboard/experiment-<id>/trial-<id>/`` beside the
checkpoints (issue 19; before, it raised "this storage type has no tensorboard area")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trialkit import core
from trialkit.storage import ObjectStoreManager, build


def test_manual_tensorboard_upload_to_an_object_store(
    store_config: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIALKIT_HOME", str(tmp_path / "home"))
    with core.init(
        checkpoint_storage=store_config, tensorboard_mode=core.TensorboardMode.MANUAL
    ) as ctx:
        tb = ctx.train.get_tensorboard_path()
        (tb / "sub").mkdir()
        (tb / "events.out.tfevents.1").write_bytes(b"event-bytes")
        (tb / "sub" / "events.out.tfevents.2").write_bytes(b"more")
        (tb / "skip.tmp").write_text("t")
        ctx.train.upload_tensorboard_files(
            selector=lambda p: p.suffix != ".tmp",
            mangler=lambda p, rank: p.with_name(f"{p.name}.{rank}"),
        )
        area = ctx._backend.tensorboard_prefix()  # local mode: the run's key names it
    assert area.startswith("tensorboard/local-")
    m = build(store_config)
    assert isinstance(m, ObjectStoreManager)
    prefix = f"{m.backend.root}/{area}"
    found = {k[len(prefix) + 1 :]: m.fs.cat_file(k) for k in m._find(prefix)}
    assert found == {
        "events.out.tfevents.1.0": b"event-bytes",
        "sub/events.out.tfevents.2.0": b"more",
    }


def test_a_destination_leaving_the_tensorboard_area_is_refused(
    store_config: dict[str, Any], tmp_path: Path
) -> None:
    src = tmp_path / "f"
    src.write_text("x")
    with pytest.raises(ValueError, match=r"destination '\.\./escape' must be a relative path"):
        build(store_config).upload_files([(src, "../escape")], "tensorboard/experiment-1")
