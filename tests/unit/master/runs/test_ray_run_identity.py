"""What the master stores and reads of a run on a Ray pool, without a cluster: such a run has no
pid on the master's machine (it once stored the master's own pid, which kill, describe and
adoption then acted on), and a Ray pool's size is checked at create."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trialkit.config import MasterConfig, Resources, load_config
from trialkit.master.runs._pools import capacity_errors
from trialkit.master.runs._process_table import Supervisor
from trialkit.store import Store, TrialState

CONFIG = {
    "entrypoint": "python3 t.py",
    "searcher": {"name": "single", "metric": "loss", "max_length": {"batches": 4}},
    "resources": {"resource_pool": "ray"},
}


def _ray_trial_left_running(tmp_path: Path) -> tuple[Store, int]:
    """A trial whose Ray run was in flight when its master went: slots held, no local pid."""
    store = Store.at(tmp_path)
    exp = store.create_experiment(name="t", config=load_config(CONFIG).as_dict())
    trial = store.create_trial(experiment_id=exp.id, request_id="r1", hparams={}, seed=1)
    store.update_trial(
        trial.id, state=TrialState.ACTIVE, run_id=1, pid=None, pid_started=time.time(), slots=[0]
    )
    return store, trial.id


def test_an_adopted_ray_run_reads_as_lost_and_signals_nothing_here(tmp_path: Path) -> None:
    store, trial_id = _ray_trial_left_running(tmp_path)
    # A process in its own group, as the old master's pid was: nothing may signal it.
    bystander = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    try:
        sup = Supervisor(store, tmp_path, 2)
        proc = sup.adopt(store.get_trial(trial_id), "ray")
        assert proc.pid is None
        sup.signal(trial_id, signal.SIGKILL)
        assert [p.trial_id for p in sup.reap()] == [trial_id]
        assert proc.exit_code() == -int(signal.SIGKILL) and proc.supervisor_lost
        assert proc.failure and "Ray" in proc.failure, proc.failure
        assert sup.free_slots() == [0, 1]  # its slot is given back
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait(timeout=30)


def _master(slot_type: str = "cpu") -> MasterConfig:
    pool = {"type": "ray", "address": "127.0.0.1:1", "slot_type": slot_type}
    return MasterConfig.model_validate({"resource_pools": {"ray": pool}})


def test_more_slots_than_the_ray_cluster_has_is_refused_at_create() -> None:
    config = Resources(resource_pool="ray", slots_per_trial=3)
    [error] = capacity_errors(config, _master(), lambda name: 2)
    assert error.startswith("resources.slots_per_trial: 3 is more than resource pool 'ray'")
    assert "2 CPU slots" in error and "\n" not in error
    assert capacity_errors(config, _master(), lambda name: 3) == []
    assert capacity_errors(config, _master(), lambda name: None) == []  # cluster did not answer


@pytest.mark.parametrize("pool", ["local", "ray"])
def test_the_capacity_check_leaves_fitting_and_local_trials_alone(pool: str) -> None:
    config = Resources(resource_pool=pool, slots_per_trial=1)
    assert capacity_errors(config, _master("gpu"), lambda name: 1) == []
    big = Resources(resource_pool=pool, slots_per_trial=5)
    assert bool(capacity_errors(big, _master("gpu"), lambda name: 1)) == (pool == "ray")


def test_the_chiefs_ports_are_distinct_and_free_where_they_are_picked() -> None:
    from trialkit.rendezvous import free_ports

    ports = free_ports(2)
    assert len(set(ports)) == 2
    for port in ports:  # the node that picked them can bind them on every interface
        with socket.socket() as s:
            s.bind(("", port))
