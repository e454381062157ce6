"""What the CLI prints, run as a user would (subprocess, no TTY, 80 columns): failures explained,
a line per event while following, tables that keep every value, ids by prefix or name."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from trialkit.errors import APIError
from trialkit.store import Store

from .conftest import EXAMPLES, TRIALKIT, Master, keep_all_checkpoints, write_script

pytestmark = pytest.mark.integration

HPARAMS = {
    "learning_rate": 0.0123,
    "n_filters1": 12,
    "n_filters2": 20,
    "dropout1": 0.25,
    "dropout2": 0.4,
    "global_batch_size": 64,
}

SCRIPT = """
import pathlib, sys, time
import trialkit
from trialkit import core

hp = trialkit.get_cluster_info().trial.hparams
with core.init() as ctx:
    for step in range(1, hp.get("checkpoints", 2) + 1):
        ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
        with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _):
            (path / "w").write_text(str(step))
    ctx.train.report_validation_metrics(steps_completed=step, metrics={"loss": 0.5, "acc": 0.9})
    for i in range(hp.get("lines", 0)):
        print(f"line {i}", flush=True)
    if hp.get("go_file"):
        while not pathlib.Path(hp["go_file"]).exists():
            time.sleep(0.05)
    time.sleep(hp.get("sleep", 0))
    if hp.get("fail"):
        raise ValueError("boom")
"""


def _config(exp_name: str, hparams: dict[str, Any], **searcher: Any) -> dict[str, Any]:
    return {
        "name": exp_name,
        "entrypoint": "python3 work.py",
        "hyperparameters": hparams,
        "searcher": {"name": "single", "metric": "loss", "max_length": 1, **searcher},
        "max_restarts": 0,
    }


def _model_dir(tmp_path: Path) -> Path:
    model_dir = tmp_path / "model"
    write_script(model_dir, "work.py", SCRIPT)
    return model_dir


def _follow(
    master: Master, config: dict[str, Any], model_dir: Path, how: str = "--follow"
) -> subprocess.Popen[str]:
    """``experiment create`` following the experiment (``--follow``: its events; ``-f``: its
    first trial's logs)."""
    cfg = model_dir / "_config.json"
    cfg.write_text(json.dumps(config))
    return _start(master, "experiment", "create", str(cfg), str(model_dir), how)


def _start(master: Master, *args: str) -> subprocess.Popen[str]:
    """The CLI running ``args`` as typed in a terminal (Ctrl-C reaches it), output piped."""
    return subprocess.Popen(
        [*TRIALKIT, *args],
        env=_env(master),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )


def _ctrl_c_as_in_a_terminal() -> None:
    """A command typed in a terminal gets SIGINT's default action; a test run started in the
    background by a non-interactive shell (``cmd &``) inherits SIGINT ignored, which the CLI
    would inherit too, and then Ctrl-C could not reach it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _env(master: Master) -> dict[str, str]:
    return {**master.env, "COLUMNS": "80"}


def _cli(master: Master, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [*TRIALKIT, *args], env=_env(master), capture_output=True, text=True, timeout=120
    )
    if check:
        assert proc.returncode == 0, (args, proc.returncode, proc.stdout, proc.stderr)
    return proc


def _column(out: str, name: str, next_name: str) -> str:
    """The text of one column of a rendered table, its wrapped pieces joined."""
    lines = out.splitlines()
    header = next(ln for ln in lines if name in ln and next_name in ln)
    start, end = header.index(name), header.index(next_name)
    body = lines[lines.index(header) + 2 :]
    return "".join(ln[start:end].strip() for ln in body)


def _trials(master: Master, experiment_id: int) -> list[dict[str, Any]]:
    """The experiment's trials; none while the CLI has not created it yet."""
    try:
        return master.describe(experiment_id)["trials"]  # type: ignore[no-any-return]
    except APIError:
        return []


def _check_error_shown(master: Master, experiment_id: int, trial_id: int) -> None:
    """describe (text, --json), t describe and e list all show the failure."""
    text = _cli(master, "e", "describe", str(experiment_id)).stdout
    assert "ERROR" in text and f"trial {trial_id} error: ValueError: boom" in text, text
    desc = json.loads(_cli(master, "e", "describe", str(experiment_id), "--json").stdout)
    [trial] = desc["trials"]
    assert trial["state"] == "ERROR" and "ValueError: boom" in trial["error"], trial
    t_text = _cli(master, "t", "describe", str(trial_id)).stdout
    assert "ERROR" in t_text and "ValueError: boom" in t_text, t_text
    listing = _cli(master, "e", "list").stdout
    [row] = [ln for ln in listing.splitlines() if ln.split()[:1] == [str(experiment_id)]]
    assert "ERROR" in row and "100%" not in row, listing


def test_follow_without_tty_prints_each_event_and_why_the_trial_failed(
    master: Master, tmp_path: Path
) -> None:
    """The reason is put in the store the way the master records it, so this checks the display
    whoever writes it."""
    model_dir = _model_dir(tmp_path)
    go = tmp_path / "go"
    proc = _follow(master, _config("fails", {"fail": True, "go_file": str(go)}), model_dir)
    try:
        master.wait_for(
            lambda: any(t["latest_validation"] for t in _trials(master, 1)),
            what="a validation",
        )
        trial_id = master.describe(1)["trials"][0]["id"]
        store = Store.for_home(master.home)
        try:
            store.update_trial(trial_id, error="ValueError: boom")
        finally:
            store.close()
        master.wait_for(
            lambda: _trials(master, 1)[0]["error"] == "ValueError: boom", what="the error stored"
        )
        go.touch()
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1, (out, err)
    lines = out.splitlines()
    assert lines[0] == "Created experiment 1"
    assert lines[1].startswith(f"trial {trial_id} started: ")
    for key, value in {"fail": True, "go_file": str(go)}.items():
        assert f"{key}={value}" in lines[1]
    # step 2's checkpoint shares the validation's line, or has its own line before it
    assert any(
        ln.startswith(f"trial {trial_id} validation at step 2: loss=0.5, acc=0.9") for ln in lines
    ), out
    assert any(re.search(r", checkpoint [0-9a-f]{8}$", ln) for ln in lines), out
    hint = f"(full output: trialkit t logs {trial_id})"
    assert f"trial {trial_id} failed: ValueError: boom {hint}" in lines, out
    assert lines[-2].startswith("single 0% · 1 errored"), out
    assert lines[-1] == f"experiment 1 ended ERROR: trial 1 failed: ValueError: boom {hint}", out
    _check_error_shown(master, 1, trial_id)


BURST = """
from trialkit import core

with core.init() as ctx:
    for step in range(1, 6):
        ctx.train.report_validation_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
        with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _):
            (path / "w").write_text(str(step))
"""


def test_follow_tells_every_validation_and_checkpoint_reported_between_two_polls(
    master: Master, tmp_path: Path
) -> None:
    """Five validations and checkpoints in well under one poll interval: each gets its line, in
    order (a describe response carries only the latest of each)."""
    model_dir = tmp_path / "model"
    write_script(model_dir, "work.py", BURST)
    config = _config("burst", {}) | {"checkpoint_storage": keep_all_checkpoints(tmp_path / "c")}
    proc = _follow(master, config, model_dir)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, (out, err)
    lines = out.splitlines()
    steps = [int(ln.split(" step ")[1].split(":")[0]) for ln in lines if " validation at " in ln]
    assert steps == [1, 2, 3, 4, 5], out
    told = re.findall(r"checkpoint ([0-9a-f]{8})\b", out)  # a UUID's start names it
    registered = master.client.request("GET", "/api/v1/experiments/1/checkpoints")["checkpoints"]
    in_order = [c["uuid"][:8] for c in sorted(registered, key=lambda c: c["steps_completed"])]
    assert told == in_order and len(told) == 5, out
    # a step's checkpoint shares its validation's line: one line per step, not two
    assert len([ln for ln in lines if ln.startswith("trial 1 ") and " step " in ln]) == 5, out


def test_a_trial_that_raises_is_explained_end_to_end(master: Master, tmp_path: Path) -> None:
    """Needs the master to record the failed run's exception line (trials.error)."""
    proc = _follow(master, _config("raises", {"fail": True}), _model_dir(tmp_path))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, (out, err)
    hint = "(full output: trialkit t logs 1)"
    assert f"trial 1 failed: ValueError: boom {hint}" in out.splitlines(), out
    assert (
        out.splitlines()[-1] == f"experiment 1 ended ERROR: trial 1 failed: ValueError: boom {hint}"
    )
    _check_error_shown(master, 1, 1)


def test_killed_search_says_what_never_ran_and_refuses_a_second_kill(
    master: Master, tmp_path: Path
) -> None:
    config = _config(
        "killed",
        {"sleep": 60, "x": {"type": "int", "minval": 1, "maxval": 100}},
        name="random",
        max_trials=4,
        max_concurrent_trials=2,
    )
    exp = master.create(config, _model_dir(tmp_path))
    master.wait_for(
        lambda: sum(1 for t in master.describe(exp)["trials"] if t["pid"]) == 2,
        what="two running trials",
    )
    _cli(master, "e", "kill", str(exp))
    master.wait_state(exp, {"CANCELED"})
    text = _cli(master, "e", "describe", str(exp)).stdout
    # The summary counts what the table shows: 4 CANCELED rows, 2 of them never ran.
    assert text.count("CANCELED") == 5, text  # the header line and 4 rows
    assert "· 4 canceled (2 never started)" in text, text
    assert "trials done" not in text
    listing = _cli(master, "e", "list").stdout
    [row] = [ln for ln in listing.splitlines() if ln.split()[:1] == [str(exp)]]
    assert "CANCELED" in row and "100%" not in row, listing
    for action in ("kill", "pause"):
        again = _cli(master, "e", action, str(exp), check=False)
        assert again.returncode == 1, again
        assert again.stderr.strip() == (
            f"trialkit: error: experiment {exp} is already CANCELED; nothing to {action}"
        )


def test_80_columns_keep_every_hparam_and_whole_uuids_and_prefixes_work(
    master: Master, tmp_path: Path
) -> None:
    config = _config("wide-hparams", {**HPARAMS, "checkpoints": 20})
    config["checkpoint_storage"] = keep_all_checkpoints(tmp_path / "ckpts")  # lists all 20
    exp = master.create(config, _model_dir(tmp_path))
    master.wait_state(exp, {"COMPLETED"})
    uuids = [c["uuid"] for c in master.describe(exp)["checkpoints"]]
    assert len(uuids) == 20

    text = _cli(master, "e", "describe", "wide-hparams").stdout  # by name
    hparams = _column(text, "hparams", "validation")
    for key, value in HPARAMS.items():
        assert f"{key}={value}" in hparams, text
    listing = _cli(master, "c", "list", "wide-")  # by a unique prefix of the name
    for u in uuids:
        assert u in listing.stdout, listing.stdout

    target = uuids[-1]
    prefix = next(
        target[:n] for n in range(4, 36) if sum(u.startswith(target[:n]) for u in uuids) == 1
    )
    out = tmp_path / "dl"
    got = _cli(master, "c", "download", prefix, "-o", str(out))
    assert target in got.stdout and (out / "w").read_text() == "20", got.stdout
    assert target in _cli(master, "c", "describe", prefix).stdout

    shared = next(c for c in "0123456789abcdef" if sum(u.startswith(c) for u in uuids) >= 2)
    ambiguous = _cli(master, "c", "download", shared, check=False)
    assert ambiguous.returncode == 2, ambiguous
    matching = [u for u in uuids if u.startswith(shared)]
    assert f"is the start of {len(matching)} checkpoint UUIDs" in ambiguous.stderr
    for u in matching[:10]:
        assert u in ambiguous.stderr
    missing = _cli(master, "e", "describe", "no-such-name", check=False)
    assert missing.returncode == 2
    assert "no experiment with id or name 'no-such-name'" in missing.stderr


def test_logs_tail(master: Master, tmp_path: Path) -> None:
    exp = master.create(_config("chatty", {"lines": 30}), _model_dir(tmp_path))
    master.wait_state(exp, {"COMPLETED"})
    [trial] = master.describe(exp)["trials"]
    full = _cli(master, "t", "logs", str(trial["id"])).stdout.splitlines()
    assert "line 29" in full
    assert (
        _cli(master, "t", "logs", str(trial["id"]), "--tail", "3").stdout.splitlines() == full[-3:]
    )
    tail = _cli(master, "e", "logs", "chatty", "-n", "2").stdout.splitlines()
    assert tail == [f"[trial {trial['id']}] {line}" for line in full[-2:]]


@pytest.mark.parametrize("how", ["--follow", "-f"])
def test_ctrl_c_while_following_says_the_experiment_keeps_running(
    master: Master, tmp_path: Path, how: str
) -> None:
    go = tmp_path / "go"
    proc = _follow(master, _config("long", {"go_file": str(go)}), _model_dir(tmp_path), how)
    try:
        master.wait_for(lambda: bool(_trials(master, 1)), what="a trial")
        time.sleep(1.0)  # the CLI is inside its follow loop
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        go.touch()
    assert proc.returncode == 130, (out, err)
    assert err.strip().endswith(
        "stopped following; experiment 1 keeps running ('trialkit experiment kill 1' stops it)"
    ), err
    assert "Traceback" not in err
    assert "error" not in err, err  # the way to stop following, not a failure
    assert master.describe(1)["experiment"]["state"] == "ACTIVE"


@pytest.mark.parametrize("command", [["t", "logs", "1", "-f"], ["e", "logs", "1", "--follow"]])
def test_ctrl_c_while_following_logs_ends_quietly(
    master: Master, tmp_path: Path, command: list[str]
) -> None:
    """Ctrl-C is how a user stops following logs: exit 130, no 'trialkit: error: aborted'."""
    go = tmp_path / "go"
    exp = master.create(_config("long", {"lines": 2, "go_file": str(go)}), _model_dir(tmp_path))
    try:
        master.wait_for(lambda: bool(_trials(master, exp)), what="a trial")
        proc = _start(master, *command)
        try:
            assert proc.stdout is not None
            first = ""  # read up to the trial's last line: the CLI is following, waiting
            while not first.endswith("line 1\n"):
                line = proc.stdout.readline()
                assert line, first
                first += line
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    finally:
        go.touch()
    assert proc.returncode == 130, (first, out, err)
    assert err.strip() == "", err


def test_bare_trialkit_prints_help(master: Master) -> None:
    proc = _cli(master)
    assert proc.stdout.startswith("Usage: trialkit") and "experiment" in proc.stdout
    assert proc.stderr == ""


def test_master_up_beside_a_running_master_says_so(master: Master) -> None:
    same = _cli(master, "master", "up")
    assert same.stdout.startswith("master already running at ") and "2 slots" in same.stdout
    other = _cli(master, "master", "up", "--slots", "5", check=False)
    assert other.returncode == 1, other
    assert "already running" in other.stderr and "--slots 5 is ignored" in other.stderr


def test_completed_pytorch_trial_has_no_status_and_logs_its_metrics(
    master: Master, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    import yaml

    model_dir = Path(shutil.copytree(EXAMPLES / "mnist_pytorch", tmp_path / "mnist"))
    cfg = yaml.safe_load((model_dir / "const.yaml").read_text())
    cfg["searcher"]["max_length"] = {"batches": 20}
    cfg["min_validation_period"] = {"batches": 10}
    exp = master.create(cfg, model_dir)
    desc = master.wait_state(exp, {"COMPLETED", "ERROR"}, timeout=150)
    [trial] = desc["trials"]
    assert trial["state"] == "COMPLETED" and trial["status"] is None, trial
    logs = _cli(master, "t", "logs", str(trial["id"])).stdout
    assert "trialkit.harness: [batch 10] validation: validation_loss=" in logs, logs
    assert "trialkit.harness: [batch 20] training: loss=" in logs, logs


def _run_in_pty(argv: list[str], env: dict[str, str], timeout: float = 120) -> tuple[int, str]:
    """Run ``argv`` with stdout and stderr on a pseudo-terminal (as in a terminal window)."""
    import pty

    main_fd, child_fd = pty.openpty()
    proc = subprocess.Popen(
        argv, env=env, stdout=child_fd, stderr=child_fd, stdin=subprocess.DEVNULL
    )
    os.close(child_fd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            data = os.read(main_fd, 65536)
        except OSError:  # the child closed its side
            break
        if not data:
            break
        chunks.append(data)
    os.close(main_fd)
    return proc.wait(timeout=max(deadline - time.monotonic(), 1)), b"".join(chunks).decode(
        errors="replace"
    )


def test_follow_on_a_terminal_keeps_the_live_table(master: Master, tmp_path: Path) -> None:
    model_dir = _model_dir(tmp_path)
    cfg = model_dir / "_config.json"
    cfg.write_text(json.dumps(_config("live", {"x": 1})))
    code, out = _run_in_pty(
        [*TRIALKIT, "experiment", "create", str(cfg), str(model_dir), "--follow"], _env(master)
    )
    assert code == 0, out
    assert "━" in out and "hparams" in out, out  # rich's live table with its progress bars
    assert "trial 1 started" not in out
    lines = [ln for ln in out.replace("\r", "\n").splitlines() if ln.strip()]
    assert lines[-1].strip() == "experiment 1 ended COMPLETED", out
    summary = next(ln for ln in reversed(lines) if "single 100% · 1 completed" in ln)
    assert summary.lstrip().startswith("single"), out  # on its own line, not on a table border


LOCAL_RUN = """
import logging, sys
import trialkit
from trialkit import pytorch
sys.path.insert(0, {tests!r})
from pytorch.trials import RegressionTrial

logging.basicConfig(level=logging.INFO, format=trialkit.LOG_FORMAT)
with pytorch.init(hparams={{"global_batch_size": 8, "dropout": 0.0}}, seed=0) as ctx:
    trainer = pytorch.Trainer(RegressionTrial(ctx), ctx)
    trainer.fit(max_length=pytorch.Batch(30), reporting_period=pytorch.Batch(10),
                validation_period=pytorch.Batch(15), checkpoint_policy="none")
"""


def test_local_trainer_run_shows_a_bar_on_a_terminal_and_log_lines_elsewhere(
    tmp_path: Path,
) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text(LOCAL_RUN.format(tests=str(Path(__file__).resolve().parents[1])))
    env = {**os.environ, "TRIALKIT_HOME": str(tmp_path / "home"), "COLUMNS": "100"}
    env.pop("TRIALKIT_CLUSTER_INFO", None)
    piped = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert piped.returncode == 0, piped.stderr
    assert "trialkit.harness: [batch 10] training: loss=" in piped.stderr
    assert "trialkit.harness: [batch 15] validation: val_loss=" in piped.stderr
    assert "━" not in piped.stderr + piped.stdout  # no bar without a terminal
    code, out = _run_in_pty([sys.executable, str(script)], env)
    assert code == 0, out
    assert "━" in out and "30/30" in out, out  # the bar, run to the end
    assert "[batch 15] validation: val_loss=" in out  # printed above the bar


def test_master_down_says_what_becomes_of_running_trials(master: Master, tmp_path: Path) -> None:
    go = tmp_path / "go"
    exp = master.create(_config("stays", {"go_file": str(go)}), _model_dir(tmp_path))
    try:
        master.wait_for(lambda: bool(_trials(master, exp)[0]["pid"]), what="a running trial")
        [trial] = _trials(master, exp)
        down = _cli(master, "master", "down")
    finally:
        go.touch()
    assert down.stdout.strip() == (
        f"master stopped; trial {trial['id']} keeps running and reports to the next master if"
        " it starts within 5m 00s ('trialkit master up'; $TRIALKIT_MASTER_RETRY_SECONDS), else"
        " it fails"
    ), down.stdout
    assert _cli(master, "master", "down").stdout.startswith("no master running for ")


def test_ctrl_c_stops_tensorboard_without_an_error(master: Master, tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    exp = master.create(_config("tb", {}), _model_dir(tmp_path))
    master.wait_state(exp, {"COMPLETED"})  # it has written TensorBoard files
    proc = _start(master, "tensorboard", str(exp))
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()  # printed once TensorBoard answers
        assert "(Ctrl-C stops it)" in banner, banner
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, (out, err)
    assert out.strip() == "TensorBoard stopped", out
    assert "error" not in err and "Traceback" not in err, err


def test_a_read_command_says_how_long_the_master_it_starts_stays(tmp_path: Path) -> None:
    from trialkit.client import stop_master

    home = tmp_path / "home"
    env = {**os.environ, "TRIALKIT_HOME": str(home), "TRIALKIT_MASTER_IDLE_TIMEOUT": "90s"}
    try:
        listed = subprocess.run(
            [*TRIALKIT, "e", "list"], env=env, capture_output=True, text=True, timeout=120
        )
    finally:
        stop_master(home)
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr.strip() == (
        f"Starting a master in the background (home {home}); it stops after 1.5 min idle;"
        " 'trialkit master down' stops it now"
    )


def test_create_f_follows_the_first_trials_logs_as_det_did(master: Master, tmp_path: Path) -> None:
    model_dir = _model_dir(tmp_path)
    cfg = model_dir / "_config.json"
    cfg.write_text(json.dumps(_config("chatty", {"lines": 3})))
    made = _cli(master, "e", "create", str(cfg), str(model_dir), "-f")
    lines = made.stdout.splitlines()
    assert lines[0] == "Created experiment 1", made.stdout
    assert [ln for ln in lines if ln.startswith("line ")] == ["line 0", "line 1", "line 2"]
    assert lines[-1] == "experiment 1 ended COMPLETED", made.stdout
