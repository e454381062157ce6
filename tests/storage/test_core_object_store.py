"""The Core API's checkpoint context in local mode with an object store (every backend's real
server): store_path, upload, restore_path, download, get_metadata and delete all go through
the manager, and a checkpoint's listed files come from its manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trialkit import core
from trialkit.storage import MANIFEST_NAME, CheckpointNotFound, build


def test_core_checkpoints_in_an_object_store(store_config: dict[str, Any], tmp_path: Path) -> None:
    storage = build(store_config)
    with core.init(checkpoint_storage=store_config) as ctx:
        with ctx.checkpoint.store_path({"steps_completed": 5}) as (path, saved):
            (path / "weights.bin").write_bytes(b"w" * 1000)
            (path / "sub").mkdir()
            (path / "sub" / "opt.bin").write_bytes(b"o" * 10)
        metadata = _meta(storage, saved)
        assert b'"steps_completed": 5' in metadata
        assert storage.list_files(saved) == {
            "metadata.json": len(metadata),
            "sub/": 0,
            "sub/opt.bin": 10,
            "weights.bin": 1000,
        }

        src = tmp_path / "src"
        src.mkdir()
        (src / "a.txt").write_text("a")
        uploaded = ctx.checkpoint.upload(src, {"steps_completed": 7})
        assert ctx.checkpoint.get_metadata(uploaded)["steps_completed"] == 7

        with ctx.checkpoint.restore_path(saved) as restored:
            assert (restored / "sub" / "opt.bin").read_bytes() == b"o" * 10
            assert not (restored / MANIFEST_NAME).exists()
        ctx.checkpoint.download(uploaded, tmp_path / "dl")
        assert (tmp_path / "dl" / "a.txt").read_text() == "a"

        ctx.checkpoint.delete(saved)
        assert not storage.exists(saved)
        with pytest.raises(CheckpointNotFound):
            with ctx.checkpoint.restore_path(saved):
                pass


def _meta(storage: Any, storage_id: str) -> bytes:
    with storage.restore_path(storage_id, selector=lambda p: p == "metadata.json") as path:
        return (path / "metadata.json").read_bytes()
