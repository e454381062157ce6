"""Editing what a user says about an experiment, its description and labels (the web UI's
edit; Determined's PATCH experiment). Its config keeps what it was created with."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from ...rest import ExperimentReply, routes
from ._schemas import ExperimentId
from ._services import AUTH, Svc
from ._views import experiment_out

#: Bounds on what an edit stores (a 422 naming the field beyond them).
MAX_LABELS = 100
MAX_LABEL_CHARS = 255
MAX_DESCRIPTION_CHARS = 10_000


def _utf8(text: str | None) -> str | None:
    """``text`` if the store can keep it: a lone surrogate (valid JSON, not UTF-8) is a 422."""
    if text is not None:
        text.encode("utf-8")  # UnicodeEncodeError is a ValueError: pydantic reports the field
    return text


Label = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_LABEL_CHARS),
    AfterValidator(_utf8),
]


def _unique(labels: list[str] | None) -> list[str]:
    """The labels in their order, each once (None: none)."""
    return list(dict.fromkeys(labels or []))


class ExperimentEdit(BaseModel):
    """The fields to change: one left out is kept; ``labels`` replaces the whole list."""

    model_config = ConfigDict(extra="forbid")
    description: Annotated[
        str | None, Field(max_length=MAX_DESCRIPTION_CHARS), AfterValidator(_utf8)
    ] = None
    labels: Annotated[list[Label] | None, Field(max_length=MAX_LABELS), AfterValidator(_unique)] = (
        None
    )


router = APIRouter(dependencies=AUTH)


@router.patch(routes.EXPERIMENT)
def edit_experiment(
    experiment_id: ExperimentId, body: ExperimentEdit, services: Svc
) -> ExperimentReply:
    """Set the experiment's description (null or "" clears it) and/or labels."""
    fields = body.model_dump(exclude_unset=True)
    if "description" in fields:
        fields["description"] = fields["description"] or None
    exp = services.store.get_experiment(experiment_id)  # 404 before anything is written
    if fields:
        exp = services.store.update_experiment(experiment_id, **fields)
    return ExperimentReply(experiment=experiment_out(exp))
