"""What trialkit does with each legacy key of Determined 0.26-0.38 configs: one table that the
docs page renders and tests/unit/config/test_legacy_configs.py checks row by row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from trialkit.config._ignored import IGNORED
from trialkit.config._searcher import REMOVED, RENAMED

Outcome = Literal["used", "warned", "refused"]


@dataclass(frozen=True)
class LegacyKey:
    """One key (dotted path as written in a config), its outcome and what happens."""

    key: str
    outcome: Outcome
    what: str


#: Keys whose handling is not a plain "ignored with a warning" (those come from IGNORED).
HANDLED: tuple[LegacyKey, ...] = (
    LegacyKey(
        "searcher.max_length: N",
        "used",
        "a unitless length (single, random, grid, adaptive_asha): Core API scripts get N as "
        "op.length; a Trial class entrypoint is refused at experiment create (it needs a unit); "
        "async_halving refuses it and says to write {batches: N}",
    ),
    LegacyKey(
        "searcher.max_length: {unit: N}",
        "used",
        "the 0.37 length contract: searcher operations to each length; Trial harnesses convert "
        "records with global_batch_size and count epochs as passes over the training data",
    ),
    LegacyKey(
        "searcher.stop_once",
        "used",
        "0.37 generation: false is promotion-based ASHA, true stopping-based (0.38 configs "
        "always stop)",
    ),
    *(
        LegacyKey(f"searcher.name: {old}", "warned", f"runs as {new}, with a note saying so")
        for old, new in RENAMED.items()
    ),
    *(
        LegacyKey(f"searcher.name: {old}", "refused", f"'{old}' has been removed; use {new}")
        for old, new in REMOVED.items()
    ),
    LegacyKey(
        "records_per_epoch",
        "used",
        "kept in the config trials receive; not used to size an epoch (an epoch is one pass "
        "over the training data, as in Determined's PyTorchTrial)",
    ),
    LegacyKey(
        "scheduling_unit",
        "used",
        "Trial harnesses report training metrics every scheduling_unit batches",
    ),
    LegacyKey(
        "min_validation_period",
        "used",
        "Trial harnesses validate every period ({batches|records|epochs: N}, 0 = never)",
    ),
    LegacyKey(
        "min_checkpoint_period",
        "used",
        "Trial harnesses checkpoint every period ({batches|records|epochs: N}, 0 = never)",
    ),
    LegacyKey(
        "optimizations.aggregation_frequency",
        "used",
        "PyTorchTrial accumulates gradients over N batches per optimizer step",
    ),
    LegacyKey(
        "optimizations.average_aggregated_gradients",
        "used",
        "PyTorchTrial divides aggregated gradients by aggregation_frequency when true",
    ),
    LegacyKey(
        "checkpoint_storage.checkpoint_path",
        "used",
        "shared_fs: read as storage_path (refused when both are given and differ)",
    ),
    LegacyKey(
        "environment.environment_variables.gpu",
        "used",
        "read as the cuda list (refused when cuda is also given)",
    ),
    LegacyKey(
        "bind_mounts",
        "used",
        "container_path becomes a symlink to host_path: a relative one in the trial's working "
        "directory, an absolute one where it names (refused at create when its parent is not "
        "writable); read_only is not enforced",
    ),
    LegacyKey(
        "entrypoint_script / launch_layer",
        "warned",
        "seed 002's draft keys: folded into entrypoint ('launch_layer entrypoint_script') with "
        "a warning that says what to write",
    ),
)


def legacy_keys() -> list[LegacyKey]:
    """Every legacy key: the handled ones, then each ignored key with its warning."""
    ignored = [
        LegacyKey(f"{section}.{key}" if section else key, "warned", f"ignored ({why})")
        for section, key, why in IGNORED
    ]
    return [*HANDLED, *ignored]
