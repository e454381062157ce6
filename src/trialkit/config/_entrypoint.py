"""A static check that an entrypoint's script or ``module:Class`` is in the model directory.

Nothing of the user's is imported or run: files are looked up by name and a Trial class is
found in its module's source with ``ast``. Commands this cannot read with certainty (shell
operators, ``cd``, an interpreter other than Python) are not checked.
"""

from __future__ import annotations

import ast
import posixpath
import re
import shlex
from collections.abc import Callable, Sequence

#: Reads a model-directory file by its relative POSIX path: its text, or None when absent.
ReadFile = Callable[[str], "str | None"]

_PYTHON = re.compile(r"python(\d+(\.\d+)?)?")
#: The launcher modules under every spelling that resolves to them (``determined.launch`` through
#: the alias, and seed 001's ``determined.launcher``).
_LAUNCHER = re.compile(
    r"(trialkit|determined)\.launch(er)?\.(torch_distributed|deepspeed|horovod|wrap_rank)"
)
_TRIAL_CLASS = re.compile(r"([\w.]+):(\w+)")
_SHELL_OPERATORS = set(";&|<>()`$\n")
#: Python options that take a value (``-W ignore``, ``-X dev``).
_PY_VALUE_OPTIONS = {"-W", "-X", "--check-hash-based-pycs"}


def entrypoint_problems(
    entrypoint: str | Sequence[str] | None,
    exists: Callable[[str], bool],
    read: ReadFile,
    where: str,
) -> list[str]:
    """What the entrypoint needs from the model directory that is not there, one line each.

    ``exists(path)`` says whether a file or directory is in the model directory; ``where``
    names that directory in the messages (``model directory /x``).
    """
    if entrypoint is None:
        return []
    if isinstance(entrypoint, str):
        match = _TRIAL_CLASS.fullmatch(entrypoint)
        if match:
            return _trial_class_problems(match[1], match[2], exists, read, where)
        if _SHELL_OPERATORS & set(entrypoint):
            return []
        try:
            argv = shlex.split(entrypoint)
        except ValueError:
            return []
    else:
        argv = [str(a) for a in entrypoint]
    return _command_problems(argv, exists, read, where)


def _command_problems(
    argv: list[str], exists: Callable[[str], bool], read: ReadFile, where: str
) -> list[str]:
    while argv and re.fullmatch(r"\w+=.*", argv[0]):  # FOO=bar python3 train.py
        argv = argv[1:]
    if not argv:
        return []
    program = posixpath.basename(argv[0])
    if _PYTHON.fullmatch(program):
        return _python_problems(argv[1:], exists, read, where)
    if program in ("sh", "bash") and len(argv) > 1 and not argv[1].startswith("-"):
        return _file_problems(argv[1], exists, where)
    if argv[0].startswith("./") or (program.endswith(".py") and "/" not in argv[0]):
        return _file_problems(argv[0], exists, where)
    return []


def _python_problems(
    args: list[str], exists: Callable[[str], bool], read: ReadFile, where: str
) -> list[str]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        opt = args[i]
        if opt == "-c":
            return []
        if opt == "-m":
            module = args[i + 1] if i + 1 < len(args) else ""
            return _module_run_problems(module, args[i + 2 :], exists, read, where)
        i += 2 if opt in _PY_VALUE_OPTIONS else 1
    if i >= len(args) or args[i] == "-":
        return []
    return _file_problems(args[i], exists, where)


def _module_run_problems(
    module: str, rest: list[str], exists: Callable[[str], bool], read: ReadFile, where: str
) -> list[str]:
    """``python -m trialkit.launch.X ... -- WORKER`` (or a Determined spelling): check the
    worker (or ``--trial``).

    Other ``-m`` modules may be installed packages rather than model-directory code: unchecked.
    """
    if not _LAUNCHER.fullmatch(module):
        return []
    if "--trial" in rest and rest.index("--trial") + 1 < len(rest):
        spec = rest[rest.index("--trial") + 1]
        match = _TRIAL_CLASS.fullmatch(spec)
        return _trial_class_problems(match[1], match[2], exists, read, where) if match else []
    if "--" in rest:
        return _command_problems(rest[rest.index("--") + 1 :], exists, read, where)
    scripts = [a for a in rest if a.endswith(".py")]
    return _file_problems(scripts[0], exists, where) if scripts else []


def _file_problems(path: str, exists: Callable[[str], bool], where: str) -> list[str]:
    if posixpath.isabs(path):
        return []  # outside the model directory: nothing to say about it here
    rel = posixpath.normpath(path)
    if rel.startswith("../") or exists(rel):
        return []
    return [f"entrypoint: {path} not found in {where}"]


def _module_file(module: str, exists: Callable[[str], bool]) -> str | None:
    """The model-directory file that defines ``module`` (``a.b``: a/b.py or a/b/__init__.py)."""
    base = module.replace(".", "/")
    for candidate in (f"{base}.py", f"{base}/__init__.py"):
        if exists(candidate):
            return candidate
    return None


def _trial_class_problems(
    module: str, name: str, exists: Callable[[str], bool], read: ReadFile, where: str
) -> list[str]:
    path = _module_file(module, exists)
    if path is None:
        return [f"entrypoint: module {module} not found in {where}"]
    source = read(path)
    if source is None or _defines(source, name) is not False:
        return []
    return [
        f"entrypoint: {path} in {where} defines no {name} (no class, assignment or import of that "
        "name); check the class name after ':'"
    ]


def _defines(source: str, name: str) -> bool | None:
    """Whether the module's top level binds ``name``; None when that cannot be told."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name == name:
                return True
            if node.name == "__getattr__":  # a module-level __getattr__ can supply any name
                return None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*" or (alias.asname or alias.name.split(".")[0]) == name:
                    return True
        elif isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            return True
        elif isinstance(node, ast.Call) and _is_dynamic(node):
            return None
    return False


def _is_dynamic(node: ast.Call) -> bool:
    """``globals()[...] = ``, ``setattr(...)``, ``exec(...)``: names bound at run time."""
    return isinstance(node.func, ast.Name) and node.func.id in ("globals", "setattr", "exec")


_HOROVOD = re.compile(r"(trialkit|determined)\.launch(er)?\.horovod")
_HARNESS = re.compile(r"(trialkit|determined)\.exec\.harness")
#: Base classes whose Trials run on torch.distributed (DDP), which Horovod does not set up.
_TORCH_TRIALS = ("PyTorchTrial", "DeepSpeedTrial")


def horovod_refusal(spec: str) -> str:
    """The one line refusing a torch Trial class under the Horovod launcher, and why."""
    return (
        f"entrypoint: {spec} is a PyTorchTrial under the Horovod launcher, which trialkit does "
        "not support (its ranks would train alone, without averaging gradients); run it with "
        f"python3 -m trialkit.launch.torch_distributed --trial {spec} (or entrypoint: {spec})"
    )


def horovod_trial_spec(entrypoint: str | Sequence[str] | None) -> str | None:
    """``module:Class`` when the entrypoint runs a Trial class under the Horovod launcher
    (``--trial X`` or ``-- python3 -m trialkit.exec.harness X``), else None."""
    if entrypoint is None:
        return None
    if isinstance(entrypoint, str):
        if _SHELL_OPERATORS & set(entrypoint):
            return None
        try:
            argv = shlex.split(entrypoint)
        except ValueError:
            return None
    else:
        argv = [str(a) for a in entrypoint]
    for i in range(len(argv) - 1):
        if argv[i] == "-m" and _HOROVOD.fullmatch(argv[i + 1]):
            return _worker_trial(argv[i + 2 :])
    return None


def _worker_trial(rest: list[str]) -> str | None:
    for i, arg in enumerate(rest[:-1]):
        if arg == "--trial" or (arg == "-m" and _HARNESS.fullmatch(rest[i + 1])):
            spec = rest[i + 1] if arg == "--trial" else (rest[i + 2 : i + 3] or [""])[0]
            return spec if _TRIAL_CLASS.fullmatch(spec) else None
    return None


def horovod_trial_problems(
    entrypoint: str | Sequence[str] | None,
    slots: int,
    exists: Callable[[str], bool],
    read: ReadFile,
) -> list[str]:
    """A PyTorchTrial (or DeepSpeedTrial) run on several slots through the Horovod launcher:
    refused at create, as its harness would not average gradients (known from the class's
    direct base in its source; an indirect one is refused when the trial starts)."""
    spec = horovod_trial_spec(entrypoint)
    if spec is None or slots <= 1:
        return []
    module, _, name = spec.partition(":")
    path = _module_file(module, exists)
    source = read(path) if path else None
    return [horovod_refusal(spec)] if source and _subclasses_torch_trial(source, name) else []


def _subclasses_torch_trial(source: str, name: str) -> bool:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return any(ast.unparse(b).endswith(_TORCH_TRIALS) for b in node.bases)
    return False
