"""Model directories: packed by the CLI (honouring .trialkitignore/.detignore), unpacked by the
master into each trial's working directory."""

from __future__ import annotations

import io
import os
import posixpath
import re
import stat
import tarfile
import zlib
from pathlib import Path

#: Determined's limit on a model definition; larger directories usually hold data by mistake.
MAX_MODEL_DEF_BYTES = 96 * 2**20
IGNORE_FILES = (".trialkitignore", ".detignore")
_ALWAYS_IGNORED = ("__pycache__/", ".git/", "*.pyc", ".venv/", ".tox/")


class ModelDirError(ValueError):
    """The model directory cannot be used."""


def _patterns(root: Path) -> list[str]:
    patterns = list(_ALWAYS_IGNORED)
    for name in IGNORE_FILES:
        f = root / name
        if f.is_file():
            for line in f.read_text().splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    patterns.append(line)
    return patterns


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """gitignore globs: '*' and '?' stay within one path segment, '**' spans segments."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _ignored(rel: str, is_dir: bool, patterns: list[str]) -> bool:
    """gitignore-style matching: later patterns win, '!' re-includes, '/' suffix = dirs only."""
    ignored = False
    name = rel.rsplit("/", 1)[-1]
    for pat in patterns:
        negate = pat.startswith("!")
        pat = pat[1:] if negate else pat
        if pat.endswith("/"):
            if not is_dir:
                continue
            pat = pat.rstrip("/")
        anchored = pat.startswith("/") or "/" in pat
        pat = pat.lstrip("/")
        hit = bool(_glob_regex(pat).match(rel if anchored else name))
        if hit:
            ignored = not negate
    return ignored


def _check_link(root: Path, link: Path, rel: str) -> None:
    """A symlink may only point inside the model directory (it is packed as a link, and a link
    out of the trial's working copy would not exist, or be someone else's file, on unpack)."""
    target = os.readlink(link)
    if os.path.isabs(target):
        raise ModelDirError(
            f"model directory: {rel!r} is a symlink to the absolute path {target!r}; "
            "copy the file into the model directory or use a relative link inside it"
        )
    try:
        resolved = (link.parent / target).resolve()
    except (RuntimeError, OSError):  # RuntimeError before Python 3.13, ELOOP after
        raise ModelDirError(
            f"model directory: {rel!r} is a symlink loop (to {target!r}); remove or fix it, "
            f"or add it to {IGNORE_FILES[0]}"
        ) from None
    if not resolved.is_relative_to(root.resolve()):
        raise ModelDirError(
            f"model directory: {rel!r} is a symlink to {target!r}, outside the model directory; "
            "copy the file into the model directory instead"
        )
    if not resolved.exists():
        raise ModelDirError(
            f"model directory: {rel!r} is a dangling symlink (to {target!r}); remove or fix it"
        )


#: What a model directory may not hold, by file type: nothing could be packed for it.
_SPECIAL_FILES = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _check_special(path: Path, rel: str) -> None:
    """Only regular files, directories and links are packed: anything else is refused by name
    (tar would pack a FIFO or device the master refuses, and skip a socket without a word)."""
    mode = path.lstat().st_mode
    for is_kind, what in _SPECIAL_FILES:
        if is_kind(mode):
            raise ModelDirError(
                f"model directory: {rel!r} is {what}, which cannot be packed; remove it or "
                f"add it to {IGNORE_FILES[0]}"
            )


def pack(model_dir: str | os.PathLike[str], limit: int = MAX_MODEL_DEF_BYTES) -> bytes:
    """A gzipped tar of the model directory, without ignored files. ModelDirError, one line, if
    it is too big or holds what cannot be packed (links leading out, dangling or looping;
    FIFOs, sockets, devices): ``create`` and ``create --dry-run`` both go through here."""
    root = Path(model_dir)
    if not root.is_dir():
        raise ModelDirError(f"model directory {str(root)!r} does not exist or is not a directory")
    patterns = _patterns(root)
    files: list[tuple[Path, str]] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(d for d in dirnames if not _ignored(prefix + d, True, patterns))
        for f in sorted(filenames):
            rel = prefix + f
            if _ignored(rel, False, patterns):
                continue
            path = Path(dirpath) / f
            if path.is_symlink():
                _check_link(root, path, rel)
            else:
                _check_special(path, rel)
            total += path.stat().st_size
            files.append((path, rel))
        for d in dirnames:
            if (Path(dirpath) / d).is_symlink():
                # os.walk does not descend into linked directories: pack the link itself.
                _check_link(root, Path(dirpath) / d, prefix + d)
                files.append((Path(dirpath) / d, prefix + d))
    if total > limit:
        biggest = sorted(files, key=lambda pr: pr[0].stat().st_size, reverse=True)[:3]
        names = ", ".join(f"{rel} ({p.stat().st_size / 2**20:.1f} MiB)" for p, rel in biggest)
        raise ModelDirError(
            f"model directory {str(root)!r} is {total / 2**20:.1f} MiB, over the "
            f"{limit / 2**20:.0f} MiB limit; largest files: {names}. List data files in "
            ".trialkitignore (or .detignore) and load them at run time instead"
        )
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, rel in files:
            tar.add(path, arcname=rel, recursive=False)
    return buf.getvalue()


def unpack(archive: bytes, dest: str | os.PathLike[str]) -> None:
    """Extract a packed model directory into ``dest`` (created if missing). Tarfile's "data"
    filter refuses absolute paths, ``..`` and links leading outside ``dest``; anything that is
    not a readable gzipped tar, holds such a member, or cannot be written, is a ModelDirError."""
    Path(dest).mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            tar.extractall(dest, filter="data")
    except (tarfile.TarError, EOFError, zlib.error, OSError) as e:
        raise ModelDirError(f"model definition cannot be unpacked: {e}") from e


#: A destination that is never written: check_archive applies the "data" filter against it.
_NOWHERE = os.path.join(os.sep, "trialkit-model-def-check")


def check_archive(archive: bytes) -> None:
    """Refuse, without extracting, what ``unpack`` would: anything that is not a gzipped tar,
    and members the "data" filter rejects (absolute or escaping paths and links, devices).
    The filter resolves links on disk as it extracts; here nothing is on disk, so a ``..``
    that follows one of the archive's own links (where that would matter) is refused too."""
    try:
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
            members = tar.getmembers()
            for member in members:
                tarfile.data_filter(member, _NOWHERE)
    except tarfile.FilterError as e:  # a readable archive with a member unpack refuses
        raise ModelDirError(
            f"cannot be unpacked: {e}; a model directory may hold only regular files, "
            f"directories and links inside it: remove what it names or add it to {IGNORE_FILES[0]}"
        ) from None
    except (tarfile.TarError, EOFError, zlib.error, OSError, ValueError) as e:
        raise ModelDirError(
            f"cannot be unpacked ({e}); send a gzipped tar of the model directory, as "
            "'trialkit experiment create' packs it"
        ) from None
    links = {m.name.removeprefix("./") for m in members if m.issym()}
    for m in members:
        paths = [m.name]
        if m.issym():
            paths.append(posixpath.join(posixpath.dirname(m.name), m.linkname))
        elif m.islnk():
            paths.append(m.linkname)
        for path in paths:
            link = _link_then_up(path, links)
            if link is not None:
                raise ModelDirError(
                    f"cannot be unpacked: {m.name!r} goes up ('..') through the archive's "
                    f"link {link!r}; pack links that stay inside the model directory"
                )


def _link_then_up(path: str, links: set[str]) -> str | None:
    """The link of ``links`` that ``path`` goes through before a '..' component, if any."""
    parts: list[str] = []
    through = None
    for part in path.removeprefix("./").split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if through is not None:
                return through
            if parts:
                parts.pop()
            continue
        parts.append(part)
        if through is None and "/".join(parts) in links:
            through = "/".join(parts)
    return None


class ArchiveFiles:
    """Look files up in a packed model directory by relative path, without extracting it."""

    #: Sources larger than this are not read (a static check has no use for them).
    MAX_READ = 4 * 2**20

    def __init__(self, archive: bytes | None) -> None:
        self._archive = archive
        self._names: set[str] = set()
        self._dirs: set[str] = set()
        if archive:
            with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
                names = [m.name.removeprefix("./") for m in tar.getmembers()]
            self._names = set(names)
            self._dirs = {n.rsplit("/", 1)[0] for n in names if "/" in n}
            for d in list(self._dirs):
                while "/" in d:
                    d = d.rsplit("/", 1)[0]
                    self._dirs.add(d)

    @classmethod
    def open(cls, archive: bytes | None) -> ArchiveFiles | None:
        """The archive's files, or None when it is not a packed model directory."""
        try:
            return cls(archive)
        except (tarfile.TarError, OSError, EOFError, zlib.error):
            return None

    def exists(self, rel: str) -> bool:
        return rel in self._names or rel in self._dirs

    def read(self, rel: str) -> str | None:
        if not self._archive or rel not in self._names:
            return None
        with tarfile.open(fileobj=io.BytesIO(self._archive), mode="r:gz") as tar:
            for member in tar.getmembers():
                if (
                    member.name.removeprefix("./") == rel
                    and member.isfile()
                    and member.size <= self.MAX_READ
                ):
                    f = tar.extractfile(member)
                    return f.read().decode(errors="replace") if f else None
        return None


def entrypoint_check(
    entrypoint: str | list[str] | None, archive: bytes | None, where: str, slots: int = 1
) -> list[str]:
    """What ``entrypoint`` needs that the packed model directory lacks, one line each
    (nothing when ``archive`` is not a packed model directory: that is reported elsewhere),
    and a PyTorchTrial it would run under Horovod on ``slots`` > 1 slots."""
    from .config import entrypoint_problems, horovod_trial_problems

    files = ArchiveFiles.open(archive)
    if files is None:
        return []
    return entrypoint_problems(entrypoint, files.exists, files.read, where) + (
        horovod_trial_problems(entrypoint, slots, files.exists, files.read)
    )
