"""Benchmark: per-batch time of TFKerasTrial (trialkit's shared loop driving the compiled train
step) and of ``model.fit`` with TrialkitCallback, vs. plain ``model.fit``, same model and data.

Goal (issue 14, "Figures"): both <= 1.03x at a ~5 ms step.

Method. The model is an MLP whose width is calibrated so one compiled train step takes about
5 ms here (TensorFlow on one intra-op and one inter-op thread). Every contender trains the same
unshuffled batches from the same initial weights. As in bench/pytorch_overhead.py, a partner
runs in lockstep: a Keras callback, at each contender batch's ``on_train_batch_begin``, stamps the
time, then runs and times one step of a separate model (its own copy of model and data) with
``train_on_batch``, the compiled step without any training loop around it. The contender's time
for a batch is the gap between two stamps minus that partner step, so each pair is measured
within ~10 ms and the +-15 % drift of these shared cores cancels; contenders that ran one after
another in separate processes gave a control 1.5x off here. The contender's ratio is its total
over the partner's over the timed batches of a round. Plain ``model.fit`` is the control: its
ratio is fit's own per-batch cost over the bare step, so the verdict divides TFKerasTrial's and
TrialkitCallback's ratios by it (median over rounds of that quotient, paired within the round,
95 % bootstrap interval from bench/_common.py). Each round runs every contender once, each in a
fresh process (no imports or leftovers weigh on another), in an order reversed every other
round. Final weights are compared with plain fit's. Timing is printed, not asserted; the script
exits non-zero only when a contender breaks.

Usage: ``python bench/keras_overhead.py [--rounds 5] [--batches 300]`` (about 2 minutes; needs
tensorflow and Keras 3, or tf_keras with TF_USE_LEGACY_KERAS=1).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import BenchmarkBroken, clean_env, lockstep_rounds, paired_ratio, ratio  # noqa: E402

BATCH = 64
IN, OUT = 256, 10
WARMUP = 20
GOAL_RATIO = 1.03


def _tf_setup() -> Any:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from trialkit.keras._keras import keras_module

    return keras_module()


def make_data(n_batches: int) -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(0)
    n = BATCH * n_batches
    return rng.standard_normal((n, IN), dtype="float32"), rng.integers(0, OUT, n)


def make_model(keras: Any, width: int) -> Any:
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input(shape=(IN,)),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(OUT),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.SGD(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def stamp_callback(keras: Any, width: int = 0, steps: int = 0) -> Any:
    """A callback that stamps each batch's start; with a ``width``, it then runs one
    ``train_on_batch`` step of its own partner model and times it."""
    partner = make_model(keras, width) if width else None
    x, y = make_data(steps) if width else (None, None)

    class Stamp(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.stamps: list[float] = []
            self.partner_s: list[float] = []

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            t0 = time.perf_counter()
            if partner is not None:
                i = len(self.stamps) % steps
                rows = slice(i * BATCH, (i + 1) * BATCH)
                partner.train_on_batch(x[rows], y[rows])
                self.partner_s.append(time.perf_counter() - t0)
            self.stamps.append(t0)

        def pairs(self) -> list[tuple[float, float]]:
            """(contender s, partner s) per timed batch after the warm-up."""
            return [
                (self.stamps[i + 1] - self.stamps[i] - self.partner_s[i], self.partner_s[i])
                for i in range(WARMUP, len(self.stamps) - 1)
            ]

    return Stamp()


# Contenders: each trains ``steps`` batches of (x, y) with the Stamp callback -----------------


def run_fit(keras: Any, width: int, data: tuple[Any, Any], steps: int, stamp: Any) -> Any:
    model = make_model(keras, width)
    model.fit(*data, batch_size=BATCH, epochs=1, shuffle=False, verbose=0, callbacks=[stamp])
    return model


def run_callback(keras: Any, width: int, data: tuple[Any, Any], steps: int, stamp: Any) -> Any:
    from trialkit import core
    from trialkit.keras import TrialkitCallback

    model = make_model(keras, width)
    with core.init() as ctx:
        cb = TrialkitCallback(ctx, None, 0, train_metrics_report_period=100, checkpoint_epochs=0)
        model.fit(*data, batch_size=BATCH, epochs=1, shuffle=False, verbose=0,
                  callbacks=[stamp, cb])  # fmt: skip
    return model


def run_trial(keras: Any, width: int, data: tuple[Any, Any], steps: int, stamp: Any) -> Any:
    """TFKerasTrial on the shared loop as ``run_under_master`` sets it up, in local mode."""
    from trialkit import core
    from trialkit import keras as tk
    from trialkit.harness import Batch, LoopSettings, Target, TrainLoop
    from trialkit.keras._strategy import KerasStrategy

    class Trial(tk.TFKerasTrial):
        def build_model(self) -> Any:
            return self.context.wrap_model(make_model(keras, width))

        def build_training_data_loader(self) -> Any:
            return data

        def build_validation_data_loader(self) -> Any:
            return data[0][:BATCH], data[1][:BATCH]

        def keras_callbacks(self) -> list[Any]:
            return [stamp]

    hparams = {"global_batch_size": BATCH}
    with core.init() as ctx:
        context = tk.TFKerasTrialContext(ctx, hparams=hparams, exp_conf={}, trial_seed=0)
        context.configure_fit(shuffle=False)
        strategy = KerasStrategy(Trial(context), context)
        never = Batch(sys.maxsize)
        settings = LoopSettings(never, never, Batch(100), checkpoint_policy="none")
        TrainLoop(ctx, strategy, settings).run([Target(Batch(steps))])
    return strategy.model


CONTENDERS = {
    "model.fit (control)": run_fit,
    "fit + TrialkitCallback": run_callback,
    "TFKerasTrial": run_trial,
}


def calibrate(keras: Any, target_ms: float) -> int:
    """The width whose bare ``train_on_batch`` step takes about ``target_ms`` (lowest of three
    medians, so a burst of load from other processes does not shrink the model)."""
    x, y = make_data(60)
    width = 600
    for _ in range(6):
        model = make_model(keras, width)
        times = []
        for i in range(180):
            rows = slice((i % 60) * BATCH, (i % 60 + 1) * BATCH)
            t0 = time.perf_counter()
            model.train_on_batch(x[rows], y[rows])
            times.append(time.perf_counter() - t0)
        ms = min(statistics.median(times[i : i + 60]) for i in (0, 60, 120)) * 1000
        if abs(ms - target_ms) / target_ms < 0.08:
            break
        width = max(32, int(width * (target_ms / ms) ** 0.5))
    return width


def run_child(name: str, width: int, batches: int) -> None:
    """One round of one contender in this fresh process; its pairs as JSON on stdout."""
    logging.disable(logging.WARNING)
    keras = _tf_setup()
    steps = WARMUP + batches + 1  # the gap after the last timed batch ends at a real batch
    stamp = stamp_callback(keras, width, steps)
    model = CONTENDERS[name](keras, width, make_data(steps), steps, stamp)
    pairs = stamp.pairs()
    if len(pairs) != batches:
        raise BenchmarkBroken(f"{name}: {len(pairs)} timed batches, expected {batches}")
    weights = [float(abs(w).sum()) for w in model.get_weights()]
    print(json.dumps({"pairs": pairs, "weights": weights}))


def run_round(name: str, width: int, batches: int, home: str) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", name, "--width", str(width)]
    proc = subprocess.run(
        [*cmd, "--batches", str(batches)], env=clean_env(Path(home)), capture_output=True,
        text=True, check=False, timeout=600,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"benchmark broken: {name} exited {proc.returncode}:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=300)
    parser.add_argument("--target-ms", type=float, default=5.0)
    parser.add_argument("--width", type=int, default=0, help="skip calibration; use this MLP width")
    parser.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        run_child(args.child, args.width, args.batches)
        return
    keras = _tf_setup()
    width = args.width or calibrate(keras, args.target_ms)
    home = tempfile.mkdtemp(prefix="trialkit-bench-")
    results = lockstep_rounds(
        CONTENDERS, args.rounds, lambda name: run_round(name, width, args.batches, home)
    )
    pairs = {name: [(c, p) for r in got for c, p in r["pairs"]] for name, got in results.items()}
    ratios = {name: [ratio(r["pairs"]) for r in got] for name, got in results.items()}
    weights = {name: got[0]["weights"] for name, got in results.items()}

    print(
        f"Keras {keras.__version__}, MLP {IN}-{width}-{width}-{OUT}, batch {BATCH}, 1 TF thread; "
        f"{args.rounds} rounds x {args.batches} timed batches (after {WARMUP} warm-up), each "
        "contender in its own process, in lockstep with a bare train_on_batch step"
    )
    head = f"{'loop':24} {'ms/batch':>9} {'bare step':>10} {'ratio':>8}  final weights"
    print(head)
    print("-" * len(head))
    control = "model.fit (control)"
    for name in CONTENDERS:
        ms = statistics.median(c for c, _ in pairs[name]) * 1e3
        bare = statistics.median(p for _, p in pairs[name]) * 1e3
        same = "same as fit" if weights[name] == weights[control] else "DIFFER from fit"
        print(f"{name:24} {ms:9.3f} {bare:10.3f} {statistics.median(ratios[name]):8.4f}  {same}")
    for name in ("fit + TrialkitCallback", "TFKerasTrial"):
        net = paired_ratio(ratios[control], ratios[name])
        verdict = "met" if net.median <= GOAL_RATIO else "NOT met"
        print(
            f"{name} per-batch time / plain model.fit's (paired by round): {net}; "
            f"goal <= {GOAL_RATIO}x: {verdict}"
        )


if __name__ == "__main__":
    main()
