"""The trial: trains to each operation's length (in batches), resuming from its checkpoint;
loss = (lr - 0.3)^2 + 1/batches."""

import json
import time

import trialkit as det
from trialkit import core

info = det.get_cluster_info()
lr = info.trial.hparams["lr"]
with core.init() as ctx:
    step = 0
    if info.latest_checkpoint:
        with ctx.checkpoint.restore_path(info.latest_checkpoint) as path:
            step = json.loads((path / "state.json").read_text())["step"]
    for op in ctx.searcher.operations():
        while step < op.length:
            step += 1
            time.sleep(0.01)
            if step % 5 == 0:
                op.report_progress(step)
        loss = (lr - 0.3) ** 2 + 1.0 / step
        ctx.train.report_validation_metrics(steps_completed=step, metrics={"loss": loss})
        with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _):
            (path / "state.json").write_text(json.dumps({"step": step}))
        op.report_completed(loss)
        if ctx.preempt.should_preempt():
            break
