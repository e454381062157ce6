"""Where trialkit keeps its state: ``$TRIALKIT_HOME`` (default ``~/.trialkit``).

The home holds the master's credentials, the store and every trial's files, so it is private to
its owner: created 0700 (and tightened to 0700 when found wider), and refused when another user
owns it. See docs/security.md.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

HOME_ENV = "TRIALKIT_HOME"

#: Modes for what trialkit creates under the home: no group or other bits.
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
#: The umask of a master process (and so of the trials it starts).
PRIVATE_UMASK = 0o077


class HomeError(RuntimeError):
    """The home directory cannot be used safely."""


def trialkit_home() -> Path:
    """The trialkit home directory (created private on first use)."""
    home = Path(os.environ.get(HOME_ENV) or Path.home() / ".trialkit").expanduser().absolute()
    return ensure_private_dir(home)


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` 0700 (parents as usual), or tighten it to 0700; refuse another user's."""
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    st = path.stat()
    if st.st_uid != os.getuid():
        raise HomeError(
            f"{HOME_ENV}: {path} belongs to uid {st.st_uid}, not to you (uid {os.getuid()});"
            " point TRIALKIT_HOME at a directory you own"
        )
    if stat.S_IMODE(st.st_mode) & 0o077:
        path.chmod(PRIVATE_DIR)
    return path


def make_private(path: Path) -> None:
    """Drop group and other bits from an existing file or directory (a no-op when missing)."""
    try:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & 0o077 and not path.is_symlink():
            path.chmod(mode & 0o700)
    except FileNotFoundError:
        pass


def make_private_tree(root: Path) -> None:
    """``make_private`` on ``root`` and everything under it (symlinks are left alone)."""
    make_private(root)
    for parent, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            make_private(Path(parent, name))


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only, whatever the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(fd, "w") as f:
        os.fchmod(f.fileno(), PRIVATE_FILE)  # an existing file keeps its mode through O_CREAT
        f.write(text)


def default_checkpoint_storage(home: Path) -> dict[str, object]:
    """Checkpoints go under the home directory unless the config says otherwise."""
    return {
        "type": "shared_fs",
        "host_path": str(home / "checkpoints"),
        "storage_path": None,
        "save_experiment_best": 0,
        "save_trial_best": 1,
        "save_trial_latest": 1,
    }
