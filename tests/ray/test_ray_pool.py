"""Trials on a Ray cluster (head + 2 worker nodes, separate processes on loopback) through a
master whose ``ray`` resource pool joins it."""

from __future__ import annotations

import contextlib
import json
import random
import re
import shutil
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml
from tests.integration.conftest import EXAMPLES, Master
from tests.ray.conftest import RayCluster, RayNode, assert_no_run_copies, run_copies

pytestmark = pytest.mark.integration


def _core_api_example(tmp_path: Path, config_name: str, **overrides: Any) -> tuple[dict, Path]:
    model = tmp_path / "model"
    shutil.copytree(EXAMPLES / "core_api", model)
    config = yaml.safe_load((model / config_name).read_text())
    config.update(overrides)
    return config, model


def test_adaptive_asha_on_the_ray_pool_completes(
    ray_master: Master, ray_cluster: RayCluster, tmp_path: Path
) -> None:
    config, model = _core_api_example(
        tmp_path,
        "3_hpsearch.yaml",
        searcher={
            "name": "adaptive_asha",
            "metric": "loss",
            "smaller_is_better": True,
            "max_length": 40,
            "max_trials": 3,
            "max_concurrent_trials": 2,
            "mode": "aggressive",
        },
        resources={"resource_pool": "ray"},
    )
    exp_id = ray_master.create(config, model)
    desc = ray_master.wait_state(exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=400)
    trials = desc["trials"]
    assert desc["experiment"]["state"] == "COMPLETED", desc
    assert len(trials) == 3 and all(t["state"] == "COMPLETED" for t in trials), trials
    logs = ray_master.cli("trial", "logs", str(trials[0]["id"])).stdout
    assert "run 1: placed on Ray node(s)" in logs, logs
    assert_no_run_copies(ray_cluster)  # each copy went before its placement group


def _placements(logs: str) -> list[str]:
    return [ln for ln in logs.splitlines() if "placed on Ray node(s)" in ln]


def test_a_two_slot_torch_trial_spans_two_ray_nodes(
    ray_master: Master, ray_cluster: RayCluster, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    model = tmp_path / "model"
    shutil.copytree(EXAMPLES / "torch_distributed", model)
    config = yaml.safe_load((model / "const.yaml").read_text())
    config["searcher"]["max_length"] = 2
    config["resources"] = {"slots_per_trial": 2, "resource_pool": "ray"}
    exp_id = ray_master.create(config, model)
    desc = ray_master.wait_state(exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=400)
    [trial] = desc["trials"]
    logs = ray_master.cli("trial", "logs", str(trial["id"])).stdout
    assert desc["experiment"]["state"] == "COMPLETED", logs
    [placed] = _placements(logs)
    nodes = re.findall(r"\(node (\w+)[,)]", placed)
    assert len(nodes) == 2 and nodes[0] != nodes[1], placed  # one bundle per node
    # The rendezvous ports are picked on the chief's node (bundle 0's), which binds them.
    [rdzv] = [ln for ln in logs.splitlines() if "rendezvous at" in ln]
    assert rdzv.endswith(f"ports chosen on the chief's node {nodes[0]}"), (rdzv, placed)
    assert "[rank=0]" in logs and "[rank=1]" in logs, logs
    assert_no_run_copies(ray_cluster)  # on both nodes, after a clean exit


def _node_running(cluster: RayCluster, script: str) -> RayNode:
    """The worker node whose process tree runs ``script`` (the trial's process)."""
    for node in cluster.nodes:
        for p in node.tree():
            with contextlib.suppress(psutil.Error):
                if any(script in part for part in p.cmdline()):
                    return node
    raise AssertionError(f"no Ray node runs {script}")


def _lost_reason_everywhere(master: Master, exp_id: int, trial_id: int) -> str:
    """The trial's end reason as REST, ``trial describe`` and ``experiment describe`` show it."""
    [trial] = master.describe(exp_id)["trials"]
    shown = master.cli("trial", "describe", str(trial_id)).stdout
    assert f"error: {trial['error']}" in shown, shown
    listed = master.cli("experiment", "describe", str(exp_id)).stdout
    assert f"trial {trial_id} error: {trial['error']}" in listed, listed
    return str(trial["error"])


def test_lost_nodes_restart_the_trial_from_its_checkpoint_then_end_it_with_the_reason(
    ray_master: Master, ray_cluster: RayCluster, tmp_path: Path
) -> None:
    """A worker node killed mid-trial (SIGKILL to its raylet and workers): the trial restarts
    on the other node from its checkpoint (max_restarts 1); that node killed too, the trial
    ends ERROR, its reason the lost node (not a killed supervisor), shown everywhere."""
    config, model = _core_api_example(
        tmp_path,
        "3_hpsearch.yaml",
        hyperparameters={"increment_by": 1},
        searcher={"name": "single", "metric": "loss", "max_length": 3000},
        resources={"resource_pool": "ray"},
        max_restarts=1,
    )
    exp_id = ray_master.create(config, model)
    ray_master.wait_for(
        lambda: bool(ray_master.describe(exp_id)["checkpoints"]),
        timeout=300,
        what="the trial's first checkpoint",
    )
    lost = [_node_running(ray_cluster, "3_hpsearch.py")]
    lost[0].kill()
    killed = time.monotonic()
    before = len(ray_master.describe(exp_id)["checkpoints"])
    try:
        ray_master.wait_for(
            lambda: (
                ray_master.describe(exp_id)["trials"][0]["run_id"] == 2
                and len(ray_master.describe(exp_id)["checkpoints"]) > before
            ),
            timeout=300,
            what="run 2's first checkpoint",
        )
        restarted = time.monotonic() - killed
        [trial] = ray_master.describe(exp_id)["trials"]
        assert trial["restarts"] == 1 and trial["state"] == "ACTIVE", trial
        assert trial["error"].startswith("Ray worker 0 lost ("), trial  # run 1's reason
        lost.append(_node_running(ray_cluster, "3_hpsearch.py"))
        assert lost[1] is not lost[0]
        lost[1].kill()
        killed = time.monotonic()
        desc = ray_master.wait_state(exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=120)
        ended = time.monotonic() - killed
        [trial] = desc["trials"]
        logs = ray_master.cli("trial", "logs", str(trial["id"])).stdout
        assert desc["experiment"]["state"] == "ERROR" and trial["state"] == "ERROR", logs
        assert trial["restarts"] == 1, trial
        reason = _lost_reason_everywhere(ray_master, exp_id, trial["id"])
        assert reason.startswith("Ray worker 0 lost (") and "its node 127.0.1." in reason, reason
        assert "supervisor was killed" not in reason, reason
        first, second = _placements(logs)
        assert first.split("(node ")[1][:8] != second.split("(node ")[1][:8], (first, second)
        out = ray_master.cli("trial", "describe", str(trial["id"]), "--metrics", "--json").stdout
        reports = json.loads(out)["training_metrics"]
        resumed = [m["steps_completed"] for m in reports if m["run_id"] == 2]
        assert resumed and min(resumed) > 10, reports  # run 2 went on from a checkpoint
        print(
            f"lost nodes: restarts={trial['restarts']}, restarted (run 2 checkpointed) "
            f"{restarted:.1f}s after the first loss, end state {trial['state']} "
            f"{ended:.1f}s after the second: {reason}"
        )
    finally:
        for node in lost:
            ray_cluster.nodes.remove(node)
            ray_cluster.add_worker(f"{node.name}b")  # for the tests after this one
        ray_cluster.wait_cpus(2)


def test_no_run_copy_outlives_a_run_killed_at_any_point(
    ray_master: Master, ray_cluster: RayCluster, tmp_path: Path
) -> None:
    """Kill a trial at random points of its run (placing, starting, running): each run's copy
    on its node, which holds the trial's token, is gone once the trial is CANCELED."""
    seed = int(time.time())
    rng = random.Random(seed)
    config, model = _core_api_example(
        tmp_path,
        "3_hpsearch.yaml",
        hyperparameters={"increment_by": 1},
        searcher={"name": "single", "metric": "loss", "max_length": 3000},
        resources={"resource_pool": "ray", "slots_per_trial": 2},
    )
    delays = [0.0, rng.uniform(0.5, 2.0), rng.uniform(2.0, 5.0)]
    seen = []
    for delay in delays:
        exp_id = ray_master.create(config, model)
        time.sleep(delay)
        seen.append(len(run_copies(ray_cluster)))
        ray_master.cli("experiment", "kill", str(exp_id))
        ray_master.wait_state(exp_id, {"CANCELED"}, timeout=120)
        assert_no_run_copies(ray_cluster)
    print(f"killed at {[f'{d:.2f}s' for d in delays]} (seed {seed}); copies then: {seen}")
    assert any(seen), seen  # at least one kill came while a copy was there


def _ray_processes_running(cluster: RayCluster, script: str) -> list[psutil.Process]:
    found = []
    for node in cluster.nodes:
        for p in node.tree():
            with contextlib.suppress(psutil.Error):
                if any(script in part for part in p.cmdline()):
                    found.append(p)
    return found


def test_pause_activate_and_kill_reach_the_trial_on_its_ray_node(
    ray_master: Master, ray_cluster: RayCluster, tmp_path: Path
) -> None:
    config, model = _core_api_example(
        tmp_path,
        "3_hpsearch.yaml",
        hyperparameters={"increment_by": 1},
        searcher={"name": "single", "metric": "loss", "max_length": 3000},
        resources={"resource_pool": "ray"},
    )
    exp_id = ray_master.create(config, model)
    ray_master.wait_for(
        lambda: bool(ray_master.describe(exp_id)["checkpoints"]), 300, "a first checkpoint"
    )
    # The run has no process on the master's machine: no pid (it once stored the master's).
    [running] = ray_master.describe(exp_id)["trials"]
    assert running["slots"] and running["pid"] is None, (running, ray_master.pid())
    shown = ray_master.cli("trial", "describe", str(running["id"]), "--json").stdout
    assert json.loads(shown)["trial"]["pid"] is None, shown
    ray_master.cli("experiment", "pause", str(exp_id))
    ray_master.wait_state(exp_id, {"PAUSED"}, timeout=120)
    ray_master.wait_for(
        lambda: not ray_master.describe(exp_id)["trials"][0]["slots"], 120, "the run to end"
    )
    assert not _ray_processes_running(ray_cluster, "3_hpsearch.py")
    ray_master.cli("experiment", "activate", str(exp_id))
    ray_master.wait_for(
        lambda: bool(_ray_processes_running(ray_cluster, "3_hpsearch.py")), 300, "run 2 on Ray"
    )
    ray_master.cli("experiment", "kill", str(exp_id))
    desc = ray_master.wait_state(exp_id, {"CANCELED"}, timeout=120)
    [trial] = desc["trials"]
    assert trial["run_id"] == 2 and trial["restarts"] == 0, trial
    ray_master.wait_for(
        lambda: not _ray_processes_running(ray_cluster, "3_hpsearch.py"), 30, "no trial process"
    )
    logs = ray_master.cli("trial", "logs", str(trial["id"])).stdout
    assert len(_placements(logs)) == 2, logs
    assert_no_run_copies(ray_cluster)  # neither the paused run's nor the killed run's


def test_a_master_restart_ends_its_ray_runs_and_the_next_master_restarts_them(
    ray_master: Master, ray_cluster: RayCluster, tmp_path: Path
) -> None:
    from trialkit.client import start_background

    config, model = _core_api_example(
        tmp_path,
        "3_hpsearch.yaml",
        hyperparameters={"increment_by": 1},
        searcher={"name": "single", "metric": "loss", "max_length": 1500},
        resources={"resource_pool": "ray"},
        max_restarts=1,
    )
    exp_id = ray_master.create(config, model)
    ray_master.wait_for(
        lambda: bool(ray_master.describe(exp_id)["checkpoints"]), 300, "a first checkpoint"
    )
    ray_master.cli("master", "down")
    # The runs' actors belonged to the master (their driver): the trial process goes with them.
    ray_master.wait_for(
        lambda: not _ray_processes_running(ray_cluster, "3_hpsearch.py"), 120, "no trial process"
    )
    assert_no_run_copies(ray_cluster)  # the actors went without cleanup: their janitors did it
    again = Master(ray_master.home, start_background(ray_master.home, wait=120), ray_master.env)
    try:
        desc = again.wait_state(exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=400)
        [trial] = desc["trials"]
        logs = again.cli("trial", "logs", str(trial["id"])).stdout
        assert desc["experiment"]["state"] == "COMPLETED", logs
        assert trial["restarts"] == 1 and trial["run_id"] == 2, trial
        assert len(_placements(logs)) == 2, logs
    finally:
        again.client.close()


def test_more_slots_than_the_ray_cluster_has_fails_at_create(
    ray_master: Master, tmp_path: Path
) -> None:
    config, model = _core_api_example(
        tmp_path, "3_hpsearch.yaml", resources={"resource_pool": "ray", "slots_per_trial": 3}
    )
    (model / "_config.json").write_text(json.dumps(config))
    out = ray_master.cli(
        "experiment", "create", str(model / "_config.json"), str(model), check=False
    )
    assert out.returncode != 0, out
    assert "resources.slots_per_trial: 3 is more than resource pool 'ray' has (2 CPU" in (
        out.stderr
    ), out
    assert "Traceback" not in out.stderr, out.stderr
    listed = ray_master.client.request("GET", "/api/v1/experiments")
    assert not listed["experiments"], listed  # nothing was created to wait for a place


def test_a_placement_that_never_comes_times_out_and_frees_its_slots(
    packed_ray_master: Master, tmp_path: Path
) -> None:
    master = packed_ray_master
    config, model = _core_api_example(
        tmp_path,
        "3_hpsearch.yaml",
        searcher={"name": "single", "metric": "loss", "max_length": 100},
        resources={"resource_pool": "ray", "slots_per_trial": 2},
        max_restarts=0,
    )
    exp_id = master.create(config, model)
    desc = master.wait_state(exp_id, {"COMPLETED", "ERROR", "CANCELED"}, timeout=120)
    [trial] = desc["trials"]
    assert desc["experiment"]["state"] == "ERROR" and trial["state"] == "ERROR", desc
    assert "Ray could not place 2 one-CPU bundle(s) (STRICT_PACK) within 5s" in trial["error"]
    assert "resource_pools.ray.placement_timeout" in trial["error"], trial["error"]
    assert trial["slots"] == [] and trial["pid"] is None, trial
    # Its slots are free again: a 1-slot trial after it is placed and runs.
    config["resources"]["slots_per_trial"] = 1
    config["searcher"]["max_length"] = 5
    again = master.create(config, model)
    done = master.wait_state(again, {"COMPLETED", "ERROR", "CANCELED"}, timeout=300)
    assert done["experiment"]["state"] == "COMPLETED", done
