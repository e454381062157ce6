"""Markdown generated from the code for the docs site: the config reference (from the pydantic
models in trialkit.config) and the legacy-key outcomes (from trialkit.config._legacy).

``python scripts/docs_gen.py config|legacy`` prints one; the mkdocs hook
(scripts/mkdocs_hooks.py) puts them where a page says ``<!-- generated: NAME -->``.
"""

from __future__ import annotations

import inspect
import json
import sys
import types
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from trialkit.config import ExperimentConfig, Length, SearcherConfig
from trialkit.config._legacy import legacy_keys
from trialkit.config._searcher import FIELDS, REQUIRED
from trialkit.config._translate import describe

_SPECIAL = {"searcher", "checkpoint_storage", "hyperparameters"}


def _default(info: Any) -> str:
    if info.is_required():
        return "required"
    value = info.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return "see below"
    if hasattr(value, "to_raw"):
        value = value.to_raw()
    return f"`{json.dumps(value)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The config models an annotation refers to (through Optional, unions and lists)."""
    found: list[type[BaseModel]] = []
    stack = [annotation]
    while stack:
        ann = stack.pop()
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            found.append(ann)
        elif get_origin(ann) in (Union, types.UnionType, list) or hasattr(ann, "__metadata__"):
            stack.extend(reversed(get_args(ann)))
    return found


def _table(model: type[BaseModel], skip: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    rows = ["| key | type | default |", "|---|---|---|"]
    for name, info in model.model_fields.items():
        if name in skip:
            continue
        kind = _kind(name, info)
        rows.append(f"| `{name}` | {_cell(kind)} | {_cell(_default(info))} |")
    return rows


def _is_length(annotation: Any) -> bool:
    return annotation is Length or any(_is_length(a) for a in get_args(annotation))


def _kind(name: str, info: Any) -> str:
    if _is_length(info.annotation):  # a plain validator: describe() cannot see inside
        unit = "{batches|records|epochs: N}"
        return f"an integer >= 0 or {unit}" if name == "max_length" else unit
    return describe(info.annotation, list(info.metadata))


def _doc(model: type[BaseModel]) -> str:
    return " ".join(inspect.cleandoc(model.__doc__ or "").split())


def config_reference() -> str:
    """Every key of an experiment config, section by section, with its type and default."""
    out = ["## Top level", "", _doc(ExperimentConfig), "", *_table(ExperimentConfig), ""]
    for name, info in ExperimentConfig.model_fields.items():
        if name in _SPECIAL:
            continue
        for model in _models(info.annotation):
            out += [f"## `{name}`", "", _doc(model), "", *_table(model), ""]
    out += _searcher_section() + _storage_section()
    return "\n".join(out)


def _searcher_section() -> list[str]:
    out = ["## `searcher`", "", _doc(SearcherConfig), "", *_table(SearcherConfig), ""]
    out += ["Keys each searcher accepts (**bold**: required):", "", "| name | keys |", "|---|---|"]
    for name, keys in FIELDS.items():
        shown = ", ".join(
            f"**`{k}`**" if k in REQUIRED[name] or k == "name" else f"`{k}`" for k in keys
        )
        out.append(f"| `{name}` | {shown} |")
    return [*out, ""]


def _storage_section() -> list[str]:
    info = ExperimentConfig.model_fields["checkpoint_storage"]
    out = ["## `checkpoint_storage`", ""]
    for model in _models(info.annotation):
        kind = get_args(model.model_fields["type"].annotation)[0]
        out += [f"### `type: {kind}`", "", _doc(model), "", *_table(model, {"type"}), ""]
    return out


def legacy_table() -> str:
    """The outcome of every legacy or cluster-only key."""
    rows = ["| key | outcome | what trialkit does |", "|---|---|---|"]
    for row in legacy_keys():
        rows.append(f"| `{_cell(row.key)}` | {row.outcome} | {_cell(row.what)} |")
    return "\n".join(rows)


GENERATORS = {"config-reference": config_reference, "legacy-keys": legacy_table}

if __name__ == "__main__":
    print(GENERATORS[sys.argv[1]]())
