"""TFKerasTrial inputs without a master: every accepted input resumes at any batch with the
batches an uninterrupted pass would have given, and config mistakes are one clear error."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow", reason="the Keras harness tests need tensorflow")
keras = pytest.importorskip("keras", reason="the Keras harness tests need Keras 3")

from trialkit import core  # noqa: E402
from trialkit.keras import SequenceAdapter, TFKerasTrialContext  # noqa: E402
from trialkit.keras._data import TrainingData  # noqa: E402
from trialkit.keras._trial import TrialContractError  # noqa: E402

X = np.arange(22 * 3, dtype="float32").reshape(22, 3)
Y = np.arange(22, dtype="float32")


class Rows(keras.utils.PyDataset):
    def __init__(self) -> None:
        super().__init__()

    def __len__(self) -> int:
        return 6

    def __getitem__(self, i: int) -> tuple[Any, Any]:
        return X[i * 4 : (i + 1) * 4], Y[i * 4 : (i + 1) * 4]


def _inputs() -> dict[str, Any]:
    return {
        "arrays": (X, Y),
        "dataset": tf.data.Dataset.from_tensor_slices((X, Y)).batch(4),
        "pydataset": Rows(),
        "sequence_adapter": SequenceAdapter(Rows(), workers=2),
    }


@pytest.mark.parametrize("kind", list(_inputs()))
@pytest.mark.parametrize("skip", [0, 3, 6, 11])
def test_resuming_at_any_batch_gives_the_uninterrupted_batches(kind: str, skip: int) -> None:
    data = TrainingData(_inputs()[kind], batch_size=4, rank=0, size=1, shuffle=True)
    assert data.epoch_len == 6  # 22 rows in batches of 4
    straight = list(itertools.islice(data.batches(0, seed=3), 18))
    resumed = list(itertools.islice(data.batches(skip, seed=3), 18 - skip))
    for (xa, ya, _), (xb, yb, _) in zip(straight[skip:], resumed, strict=True):
        assert np.array_equal(np.asarray(xa), np.asarray(xb))
        assert np.array_equal(np.asarray(ya), np.asarray(yb))
    if kind in ("arrays", "pydataset"):  # the harness shuffles these, per epoch
        first, second = straight[:6], straight[6:12]
        assert not all(np.array_equal(a[1], b[1]) for a, b in zip(first, second, strict=True))


def test_unsupported_training_data_is_one_clear_error() -> None:
    with pytest.raises(TrialContractError, match="return a tf.data.Dataset"):
        TrainingData({1, 2}, batch_size=4, rank=0, size=1, shuffle=True)


def test_context_checks_global_batch_size_and_names_missing_hparams(trialkit_home: Path) -> None:
    with core.init() as ctx:
        with pytest.raises(TrialContractError, match="hyperparameters.global_batch_size"):
            TFKerasTrialContext(ctx, hparams={}, exp_conf={})
        context = TFKerasTrialContext(
            ctx, hparams={"global_batch_size": 8, "lr": 0.1}, exp_conf={"data": {"rows": 5}}
        )
        assert context.get_per_slot_batch_size() == context.get_global_batch_size() == 8
        assert context.get_data_config() == {"rows": 5} and context.get_hparam("lr") == 0.1
        with pytest.raises(ValueError, match="'layers' is not defined; the trial has"):
            context.get_hparam("layers")
        context.configure_fit(class_weight={0: 1.0, 1: 2.0}, verbose=False)
        assert context.fit_config.class_weight == {0: 1.0, 1: 2.0}
        assert context.fit_config.verbose is False and context.fit_config.shuffle is True
