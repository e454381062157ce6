"""``trialkit ui`` (a one-time login link to the web UI) and ``trialkit tensorboard``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click

from .._home import trialkit_home
from .._tensorboards import record_tensorboard
from ..rendezvous import free_port
from ._common import CLIError, get_client, resolve_experiment

#: Seconds TensorBoard gets to answer before the command gives up.
TENSORBOARD_START_SECONDS = 90.0


def _has_display() -> bool:
    """Whether a browser could open a window here (not over ssh or in a container)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


@click.command("ui")
@click.argument("experiment", required=False)
@click.option("--no-open", is_flag=True, help="Print the link only; do not open a browser.")
@click.option(
    "--revoke", is_flag=True, help="End every browser session (and unused link); print no link."
)
def ui(experiment: str | None, no_open: bool, revoke: bool) -> None:
    """Print (and open) a one-time login link to the master's web UI.

    The link holds a code that works once, for two minutes; the browser then keeps a session
    cookie for 12 hours at most. The master's token never appears in the link.
    """
    if revoke:
        if experiment:
            raise CLIError("--revoke: give no experiment with it")
        _revoke()
        return
    client = get_client()
    page = f"experiments/{resolve_experiment(client, experiment)}" if experiment else ""
    url = client.ui_login_url(page)
    click.echo(f"web UI: {url}")
    click.echo("  (the link works once, within 2 minutes; run 'trialkit ui' for another)")
    if not no_open and _has_display():
        import webbrowser

        webbrowser.open(url)


def _revoke() -> None:
    """End every web UI session of the running master (none runs: there is none to end)."""
    from ..client import client_for

    client = client_for(trialkit_home())
    if client is None:
        click.echo("no master is running: no web UI session to end")
        return
    client.ui_revoke()
    click.echo("every web UI session has ended; run 'trialkit ui' for a new link")


def _logdir_spec(root: Path, experiment_ids: list[int], trial_id: int | None) -> str:
    """TensorBoard's ``--logdir_spec``: one named run folder per experiment (or the one trial)."""
    if trial_id is not None:
        [exp] = experiment_ids
        path = root / f"experiment-{exp}" / f"trial-{trial_id}"
        if not path.is_dir():
            raise CLIError(
                f"trial {trial_id} of experiment {exp} has no TensorBoard files ({path})"
            )
        return f"trial-{trial_id}:{path}"
    dirs = [root / f"experiment-{e}" for e in experiment_ids]
    missing = [str(e) for e, d in zip(experiment_ids, dirs, strict=True) if not d.is_dir()]
    if missing:
        raise CLIError(
            f"no TensorBoard files for experiment {', '.join(missing)} under {root}"
            " (trials write them once they report metrics)"
        )
    return ",".join(f"experiment-{e}:{d}" for e, d in zip(experiment_ids, dirs, strict=True))


def _wait_until_up(proc: subprocess.Popen[bytes], url: str) -> None:
    import httpx

    deadline = time.monotonic() + TENSORBOARD_START_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise CLIError(f"tensorboard exited with code {proc.returncode} before it served")
        try:
            if httpx.get(url, timeout=2, trust_env=False).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.terminate()
    raise CLIError(f"tensorboard did not answer at {url} within {TENSORBOARD_START_SECONDS:.0f}s")


def _exit_on_sigterm() -> None:
    def stop(signum: int, _: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGHUP, stop)


@click.command("tensorboard")
@click.argument("experiments", nargs=-1, required=True)
@click.option(
    "--trial", "trial_id", type=int, default=None, help="Only this trial (one experiment)."
)
@click.option("--port", type=int, default=None, help="Port to serve on (default: a free one).")
def tensorboard(experiments: tuple[str, ...], trial_id: int | None, port: int | None) -> None:
    """Run TensorBoard over the event files of experiments (or one trial) until Ctrl-C."""
    try:
        import tensorboard as _tb  # noqa: F401  (only checks it is installed)
    except ImportError:
        raise CLIError(
            "tensorboard is not installed: pip install 'trialkit[tensorboard]'"
        ) from None
    client = get_client()
    ids = [resolve_experiment(client, ref) for ref in experiments]
    if trial_id is not None and len(ids) != 1:
        raise CLIError("--trial: give exactly one experiment with it")
    if trial_id is not None and client.describe_trial(trial_id).trial.experiment_id != ids[0]:
        raise CLIError(f"--trial: trial {trial_id} is not in experiment {ids[0]}")
    spec = _logdir_spec(trialkit_home() / "tensorboard", ids, trial_id)
    port = port or free_port()
    url = f"http://127.0.0.1:{port}/"
    cmd = [sys.executable, "-m", "tensorboard.main", "--logdir_spec", spec]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--reload_interval", "5"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _exit_on_sigterm()  # so the finally below stops TensorBoard when this command is stopped
    record: Path | None = None
    try:
        _wait_until_up(proc, url)
        record = record_tensorboard(trialkit_home(), url, ids, trial_id)
        click.echo(f"TensorBoard: {url}  (Ctrl-C stops it)", err=False)
        sys.stdout.flush()
        proc.wait()
    except KeyboardInterrupt:  # the way the banner says to stop it: not an error
        click.echo("\nTensorBoard stopped")
    finally:
        if record is not None:
            record.unlink(missing_ok=True)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
