"""Stage 4: distributed training. This script is its own launcher: with no arguments it starts
one worker per slot (each re-invoking this script as ``worker RANK LOCAL_RANK``), and the
workers coordinate through the Core API's DistributedContext."""

import logging
import pathlib
import queue
import subprocess
import sys
import threading
import time

import trialkit as det
from trialkit import core


def save_state(
    x: int, steps_completed: int, trial_id: int, checkpoint_directory: pathlib.Path
) -> None:
    with checkpoint_directory.joinpath("state").open("w") as f:
        f.write(f"{x},{steps_completed},{trial_id}")


def load_state(trial_id: int, checkpoint_directory: pathlib.Path) -> tuple:
    with checkpoint_directory.joinpath("state").open("r") as f:
        x, steps_completed, ckpt_trial_id = (int(field) for field in f.read().split(","))
    return (x, steps_completed) if ckpt_trial_id == trial_id else (x, 0)


def main(core_context: core.Context, latest_checkpoint, trial_id: int, increment_by: int) -> None:
    x = 0
    starting_batch = 0
    if latest_checkpoint is not None:
        with core_context.checkpoint.restore_path(latest_checkpoint) as path:
            x, starting_batch = load_state(trial_id, path)

    batch = starting_batch
    last_checkpoint_batch = None
    steps_completed = batch
    for op in core_context.searcher.operations():
        while batch < op.length:
            # Increment by the sum of every worker's increment_by value (in effect
            # increment_by * workers, but it shows a communication primitive at work).
            all_increment_bys = core_context.distributed.allgather(increment_by)
            x += sum(all_increment_bys)
            steps_completed = batch + 1
            time.sleep(0.01)
            # some logs are easier to read if only the chief writes them
            if core_context.distributed.rank == 0:
                logging.info(f"x is now {x}")
            if steps_completed % 10 == 0:
                # Only the chief may report training metrics and progress, or save checkpoints.
                if core_context.distributed.rank == 0:
                    core_context.train.report_training_metrics(
                        steps_completed=steps_completed, metrics={"x": x}
                    )
                    op.report_progress(steps_completed)
                    checkpoint_metadata = {"steps_completed": steps_completed}
                    with core_context.checkpoint.store_path(checkpoint_metadata) as (path, _):
                        save_state(x, steps_completed, trial_id, path)
                    last_checkpoint_batch = steps_completed
                # Every worker asks; the chief's answer (from the master) reaches them all.
                if core_context.preempt.should_preempt():
                    return
            batch += 1
        # only the chief may report validation metrics and completed operations
        if core_context.distributed.rank == 0:
            core_context.train.report_validation_metrics(
                steps_completed=steps_completed, metrics={"x": x}
            )
            op.report_completed(x)

    # again, only the chief may upload checkpoints
    if core_context.distributed.rank == 0 and last_checkpoint_batch != steps_completed:
        with core_context.checkpoint.store_path({"steps_completed": steps_completed}) as (path, _):
            save_state(x, steps_completed, trial_id, path)


def launcher_main(slots_per_node: int, num_nodes: int, cross_rank: int) -> int:
    """Start one worker per slot; if one fails, kill the rest and return its exit code."""
    procs = []
    for local_rank in range(slots_per_node):
        rank = cross_rank * slots_per_node + local_rank
        cmd = [
            # wrap_rank prefixes each output line with [rank=N] ||, so logs can be told apart
            sys.executable, "-m", "trialkit.launch.wrap_rank", str(rank), "--",
            # re-invoke this script as a worker
            sys.executable, __file__, "worker", str(rank), str(local_rank),
        ]  # fmt: skip
        procs.append(subprocess.Popen(cmd))

    # Wait for all workers, but stop everything as soon as one fails: a distributed job with
    # a dead worker would otherwise hang.
    done: queue.Queue = queue.Queue()

    def wait_for_worker(proc: subprocess.Popen) -> None:
        proc.wait()
        done.put(proc)

    threads = [threading.Thread(target=wait_for_worker, args=(p,)) for p in procs]
    for t in threads:
        t.start()
    exit_code = 0
    for _ in procs:
        proc = done.get()
        if proc.returncode != 0 and exit_code == 0:
            logging.error(f"worker {proc.pid} exited with code {proc.returncode}")
            exit_code = proc.returncode
            for p in procs:
                if p.poll() is None:
                    p.kill()
    for t in threads:
        t.join()
    return exit_code


def worker_main(
    slots_per_node: int, num_nodes: int, cross_rank: int, chief_ip: str, rank: int, local_rank: int
) -> None:
    # Without a training framework to define ranks, derive them from the ClusterInfo.
    distributed = core.DistributedContext(
        rank=rank,
        size=num_nodes * slots_per_node,
        local_rank=local_rank,
        local_size=slots_per_node,
        cross_rank=cross_rank,
        cross_size=num_nodes,
        chief_ip=chief_ip,
    )
    with core.init(distributed=distributed) as core_context:
        main(core_context, latest_checkpoint, trial_id, hparams["increment_by"])


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    info = det.get_cluster_info()
    assert info is not None, (
        "this example needs a master: trialkit experiment create 4_distributed.yaml ."
    )
    latest_checkpoint = info.latest_checkpoint
    trial_id = info.trial.trial_id
    hparams = info.trial.hparams

    # rendezvous information from the ClusterInfo
    slots_per_node = len(info.slot_ids)
    num_nodes = len(info.container_addrs)
    cross_rank = info.container_rank
    chief_ip = info.container_addrs[0]

    # This script runs both as the launcher of the workers and as each worker.
    if len(sys.argv) == 1:
        sys.exit(launcher_main(slots_per_node, num_nodes, cross_rank))
    rank = int(sys.argv[2])
    local_rank = int(sys.argv[3])
    worker_main(slots_per_node, num_nodes, cross_rank, chief_ip, rank, local_rank)
