"""The imports of ``src/trialkit`` follow the design's arrows (design.md "Layout", "Processes").

The graph is read from the source with ``ast``: module-level, function-level and
``TYPE_CHECKING`` imports, relative imports resolved. A rule says what a package never *loads*:
it is checked on every chain of imports that starts in the package (importing ``a.b.c`` also runs
``a/__init__.py`` and ``a/b/__init__.py``), and a failure prints the chain with line numbers.
``TYPE_CHECKING`` imports never run, so they count as direct arrows only. A subprocess then checks
the same for what really lands in ``sys.modules``.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
ROOT = "trialkit"

FRAMEWORKS = ("torch", "tensorflow", "keras", "tf_keras", "deepspeed", "horovod", "lightning")
TRIAL_CLASSES = ("trialkit.pytorch", "trialkit.keras", "trialkit.deepspeed")
HARNESSES = (*TRIAL_CLASSES, "trialkit.harness")
SERVICE = ("trialkit.master", "trialkit.store", "sqlalchemy", "fastapi", "starlette", "uvicorn")


@dataclass(frozen=True)
class Rule:
    source: str
    never: tuple[str, ...]
    why: str


# Who never loads what. A target names a trialkit module or package, or a third-party top-level
# module; a package covers its submodules.
RULES = (
    Rule(
        "trialkit.core",
        ("trialkit.master", "trialkit.store", "trialkit.cli", *TRIAL_CLASSES),
        "the Core API runs in every trial process, under any framework, with or without a master",
    ),
    Rule(
        "trialkit.searcher",
        ("trialkit.master", "trialkit.store", "trialkit.client", "httpx"),
        "search methods are pure: events in, operations out",
    ),
    Rule(
        "trialkit.master",
        (*FRAMEWORKS, *HARNESSES, "trialkit.core", "trialkit.cli"),
        "the service never imports a training framework nor the code that runs inside trials",
    ),
    Rule("trialkit.harness", ("trialkit.master", "trialkit.store"), "harnesses import core only"),
    *(
        Rule(trial_side, ("trialkit.master", "trialkit.store"), "it runs inside trial processes")
        for trial_side in (
            "trialkit.exec",
            "trialkit.generic",
            "trialkit._alias",
            "trialkit.contract._cluster_info",
            "trialkit.lightning",
        )
    ),
    Rule("trialkit.cli", SERVICE, "the CLI talks to the master over HTTP only"),
    Rule("trialkit.launch", ("trialkit.master", "trialkit.store"), "launchers run inside trials"),
    Rule("trialkit.storage", ("trialkit.master", "trialkit.store"), "storage is used by trials"),
    Rule("trialkit.client._master_client", SERVICE, "the HTTP client is the client side"),
    Rule("trialkit.rest", SERVICE, "the REST contract is shared by the CLI, trials and the master"),
    Rule(
        "trialkit.client._discovery",
        SERVICE,
        "clients find and start the master without loading it",
    ),
    Rule("trialkit.experimental", SERVICE, "the SDK is a client of the master's REST API"),
    Rule(
        "trialkit.store",
        ("trialkit.master", "trialkit.core", "trialkit.cli", "trialkit.searcher", *FRAMEWORKS),
        "the store is the bottom layer: persistence only",
    ),
    Rule(
        "trialkit.config",
        ("trialkit.master", "trialkit.store", "trialkit.core", *FRAMEWORKS),
        "the config is read by the CLI, the master and trials alike",
    ),
)

_LOCAL_SEARCH_RUNNER = (
    "Determined's det.searcher.LocalSearchRunner: the runner is a client (trialkit.client), and"
    " trialkit.searcher names it only when asked for (a module __getattr__), so importing a search"
    " method loads no client"
)
_RUNNER_BY_BASE = (
    "the harness entry point runs a Trial by its base class: it loads that package's runner only"
    " for a class already on that base (a PyTorchTrial never loads Keras)"
)
_CORE_V2 = (
    "Determined's det.experimental.core_v2 is core's unmanaged mode: it builds core's contexts"
    " itself, so it shares core's builder and local run"
)

# Arrows the rules would forbid but the design asks for; a chain never goes through them.
EXCEPTIONS = {
    ("trialkit.searcher", "trialkit.client._search_runner"): _LOCAL_SEARCH_RUNNER,
    ("trialkit.exec.harness", "trialkit.keras._run"): _RUNNER_BY_BASE,
    ("trialkit.exec.harness", "trialkit.deepspeed._trainer"): _RUNNER_BY_BASE,
    ("trialkit.exec.harness", "trialkit.lightning._trial"): _RUNNER_BY_BASE,
    ("trialkit.experimental.core_v2", "trialkit.core._context"): _CORE_V2,
    ("trialkit.experimental.core_v2", "trialkit.core._local_run"): _CORE_V2,
}

# Function-level arrows that close a cycle inside one package, and why they stay for now.
CYCLE_EXCEPTIONS = {
    ("trialkit.searcher", "trialkit.client._search_runner"): _LOCAL_SEARCH_RUNNER,
}


@dataclass(frozen=True)
class Arrow:
    source: str
    target: str
    line: int
    kind: str  # "module", "function" (runs when called) or "type" (TYPE_CHECKING: never runs)

    def __str__(self) -> str:
        where = "" if self.kind == "module" else f", {self.kind}-level"
        return f"{self.source} (line {self.line}{where}) -> {self.target}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((SRC / ROOT).rglob("*.py"))}


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, kind: str = "module") -> Iterator[tuple[ast.stmt, str]]:
    """Every import statement under ``tree`` with where it runs."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, kind
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _imports(node, "type" if kind == "type" else "function")
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), "type")
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), kind)
        else:
            yield from _imports(node, kind)


def _resolve_from(module: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` reads from."""
    if node.level == 0:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(module: str, node: ast.stmt) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = _resolve_from(module, node)
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            yield sub if sub in MODULES else base


def arrows() -> list[Arrow]:
    """Every import in src/trialkit, one arrow per imported module."""
    found = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        for node, kind in _imports(tree):
            for target in _targets(module, node):
                if target != module:
                    found.append(Arrow(module, target, node.lineno, kind))
    return found


def covers(prefix: str, name: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def package_of(module: str) -> str:
    """``trialkit.core._metrics`` -> ``trialkit.core``; a top-level module is its own package."""
    return ".".join(module.split(".")[:2])


def _parents(module: str) -> Iterator[str]:
    """The packages Python imports before ``module``: ``a.b.c`` -> ``a``, ``a.b``."""
    parts = module.split(".")
    for i in range(1, len(parts)):
        yield ".".join(parts[:i])


def _runtime_graph(all_arrows: Iterable[Arrow]) -> dict[str, list[Arrow]]:
    """What importing or running a module may load: its run-time imports and their parents."""
    graph: dict[str, list[Arrow]] = {m: [] for m in MODULES}
    for a in all_arrows:
        if a.kind == "type" or (a.source, a.target) in EXCEPTIONS:
            continue
        graph[a.source].append(a)
        for parent in _parents(a.target):
            if parent in MODULES and parent != a.source and not covers(a.source, parent):
                graph[a.source].append(Arrow(a.source, parent, a.line, a.kind))
    return graph


def chains_to(
    start: str, forbidden: tuple[str, ...], graph: dict[str, list[Arrow]], direct: list[Arrow]
) -> Iterator[list[Arrow]]:
    """The shortest chain from ``start`` to each forbidden module it can load."""
    for a in direct:  # a TYPE_CHECKING arrow is forbidden too, though it never runs
        if (
            a.source == start
            and a.kind == "type"
            and (a.source, a.target) not in EXCEPTIONS
            and any(covers(f, a.target) for f in forbidden)
        ):
            yield [a]
    seen = {start}
    frontier: list[tuple[str, list[Arrow]]] = [(start, [])]
    while frontier:
        nxt = []
        for module, chain in frontier:
            for a in graph.get(module, []):
                if any(covers(f, a.target) for f in forbidden):
                    yield [*chain, a]
                elif a.target in MODULES and a.target not in seen:
                    seen.add(a.target)
                    nxt.append((a.target, [*chain, a]))
        frontier = nxt


def violations() -> list[str]:
    all_arrows = arrows()
    graph = _runtime_graph(all_arrows)
    found: dict[tuple[str, str], str] = {}
    for rule in RULES:
        for module in (m for m in MODULES if covers(rule.source, m)):
            for chain in chains_to(module, rule.never, graph, all_arrows):
                target = next(f for f in rule.never if covers(f, chain[-1].target))
                key = (rule.source, target)
                if key not in found or len(chain) < found[key].count("\n"):
                    found[key] = (
                        f"{rule.source} must never load {target} ({rule.why}):\n    "
                        + "\n    ".join(map(str, chain))
                    )
    return sorted(found.values())


def cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def _describe_cycle(component: list[str], all_arrows: list[Arrow], level: str) -> str:
    inside = set(component)
    lines = [
        str(a)
        for a in all_arrows
        if (package_of(a.source) if level == "package" else a.source) in inside
        and (package_of(a.target) if level == "package" else a.target) in inside
        and (level == "module" or package_of(a.source) != package_of(a.target))
    ]
    return f"{level} cycle {' <-> '.join(component)}:\n    " + "\n    ".join(sorted(set(lines)))


def _runtime_internal(all_arrows: list[Arrow]) -> list[Arrow]:
    """Arrows between trialkit modules that run, less the cycle exceptions."""
    return [
        a
        for a in all_arrows
        if a.kind != "type" and a.target in MODULES and (a.source, a.target) not in CYCLE_EXCEPTIONS
    ]


# -- the tests ------------------------------------------------------------------------------------


def test_the_walker_sees_the_imports_it_must() -> None:
    """Relative, function-level and TYPE_CHECKING imports all become arrows."""
    found = {(a.source, a.target, a.kind) for a in arrows()}
    assert ("trialkit.harness._loop", "trialkit.core", "module") in found  # from .. import core
    assert ("trialkit.core._context", "trialkit.core._local", "function") in found
    assert ("trialkit", "trialkit.core", "type") in found
    assert ("trialkit.searcher._factory", "trialkit.searcher._optuna", "function") in found
    assert ("trialkit.cli", "trialkit.cli._master", "module") in found


def test_a_rule_is_checked_on_chains_not_just_direct_imports() -> None:
    """The shared loop reaches the checkpoint journal only through other modules: a rule against
    it would fail with the whole chain, each arrow starting where the last one ended."""
    all_arrows = arrows()
    graph = _runtime_graph(all_arrows)
    chain = next(
        chains_to("trialkit.harness._loop", ("trialkit.contract._journal",), graph, all_arrows)
    )
    assert len(chain) >= 2
    assert chain[0].source == "trialkit.harness._loop"
    assert chain[-1].target == "trialkit.contract._journal"
    assert all(a.target == b.source for a, b in zip(chain, chain[1:], strict=False))
    assert not any(
        a.source == "trialkit.harness._loop" and a.target == chain[-1].target for a in all_arrows
    )
    # ... and local mode journals its run for the master: no way leads from core to the store.
    assert not list(chains_to("trialkit.core._context", ("trialkit.store",), graph, all_arrows))


def test_no_forbidden_arrow() -> None:
    found = violations()
    assert not found, "forbidden imports:\n" + "\n".join(found)


def test_no_cycle_between_packages() -> None:
    internal = _runtime_internal(arrows())
    edges = {
        (package_of(a.source), package_of(a.target))
        for a in internal
        if package_of(a.source) != package_of(a.target)
    }
    found = cycles(edges)
    assert not found, "\n".join(_describe_cycle(c, internal, "package") for c in found)


def test_no_cycle_between_modules() -> None:
    internal = _runtime_internal(arrows())
    found = cycles((a.source, a.target) for a in internal)
    assert not found, "\n".join(_describe_cycle(c, internal, "module") for c in found)


def test_every_exception_is_still_needed() -> None:
    """An exception that no import uses any more is dropped from the table."""
    used = {(a.source, a.target) for a in arrows()}
    assert set(EXCEPTIONS) <= used, set(EXCEPTIONS) - used
    assert set(CYCLE_EXCEPTIONS) <= used, set(CYCLE_EXCEPTIONS) - used


def _private_owner(target: str) -> str | None:
    """The package whose private module ``target`` is (``trialkit.core._http`` -> ``trialkit.core``);
    None for a public module and for trialkit's own top-level ``_modules`` (shared by all)."""
    parts = target.split(".")
    for i, part in enumerate(parts[2:], start=2):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def test_no_private_import_across_packages() -> None:
    """A package reaches another one through its public names (its ``__init__``), never through
    its ``_private`` modules: what a package may change freely stays its own business."""
    offenders = sorted(
        {
            str(a)
            for a in arrows()
            if a.target in MODULES
            and (owner := _private_owner(a.target)) is not None
            and package_of(a.source) != package_of(owner)
            and (a.source, a.target) not in EXCEPTIONS
        }
    )
    assert not offenders, "private imports across packages:\n    " + "\n    ".join(offenders)


# -- what a strategy sees of its trial context ----------------------------------------------------

#: The loop strategies of the Trial harnesses: they reach their trial context through its public
#: names and its ``runtime`` (harness.TrialRuntime and its framework subclasses) only.
STRATEGY_MODULES = tuple(m for m in MODULES if m.rsplit(".", 1)[-1].startswith("_strategy"))
_CONTEXT_NAMES = frozenset({"context", "ctx", "_context"})


def _is_context(node: ast.expr, aliases: set[str]) -> bool:
    """``context``/``ctx`` (or a name bound to one) or ``self.context``."""
    if isinstance(node, ast.Name):
        return node.id in aliases
    return (
        isinstance(node, ast.Attribute)
        and node.attr in _CONTEXT_NAMES
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def _context_aliases(tree: ast.AST) -> set[str]:
    """The names a module binds to the trial context (``ctx, trial = self.context, self.trial``)."""
    aliases = set(_CONTEXT_NAMES)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            pairs = (
                zip(target.elts, node.value.elts, strict=False)
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple)
                else [(target, node.value)]
            )
            for name, value in pairs:
                if isinstance(name, ast.Name) and _is_context(value, aliases):
                    aliases.add(name.id)
    return aliases


def private_context_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, attribute)`` for each private attribute of the trial context the code touches."""
    aliases = _context_aliases(tree)
    return sorted(
        (node.lineno, node.attr)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not (node.attr.startswith("__") and node.attr.endswith("__"))
        and _is_context(node.value, aliases)
    )


def test_the_context_check_sees_reads_through_aliases() -> None:
    code = (
        "def f(self):\n    ctx, t = self.context, self.trial\n    c = ctx\n    return c._x, t._y\n"
    )
    assert private_context_reads(ast.parse(code)) == [(4, "_x")]
    assert {"trialkit.pytorch._strategy", "trialkit.keras._strategy"} <= set(STRATEGY_MODULES)


def test_strategies_read_no_private_attribute_of_the_trial_context() -> None:
    """Design "harness": a strategy sees its context's public names and ``context.runtime``, so
    the context may change its private state freely."""
    offenders = [
        f"{module} (line {line}): context.{attr}"
        for module in STRATEGY_MODULES
        for line, attr in private_context_reads(ast.parse(MODULES[module].read_text()))
    ]
    assert not offenders, "strategies reading the trial context's privates:\n    " + (
        "\n    ".join(offenders)
    )


# -- what really loads ------------------------------------------------------------------------------


def _loaded_after(code: str, candidates: tuple[str, ...], home: Path) -> list[str]:
    """Which of ``candidates`` are in ``sys.modules`` after a fresh interpreter runs ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {candidates!r} if m in sys.modules)))"
    env = {**os.environ, "TRIALKIT_HOME": str(home)}
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


SERVICE_MODULES = (*SERVICE, "trialkit.master._daemon", "trialkit.master.api._app")


def test_the_cli_finding_no_master_loads_no_service(tmp_path: Path) -> None:
    """``trialkit master status`` looks for a master (client-side discovery) without loading
    the service: no store, no SQLAlchemy, no FastAPI, no master package."""
    code = (
        "import contextlib, io, trialkit.cli\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n"
        "        trialkit.cli.main(['master', 'status'])\n"
        "    except SystemExit as e:\n"
        "        assert not e.code, e.code\n"
        "assert 'no master running' in out.getvalue(), out.getvalue()\n"
    )
    assert _loaded_after(code, SERVICE_MODULES, tmp_path) == []


def test_the_master_loads_no_framework(tmp_path: Path) -> None:
    code = "import trialkit.master, trialkit.master.api._app, trialkit.master.engine._engine"
    loaded = _loaded_after(code, (*FRAMEWORKS, *HARNESSES, "trialkit.core"), tmp_path)
    assert loaded == []


def test_search_methods_load_no_client(tmp_path: Path) -> None:
    """Importing the search methods loads no HTTP client; Determined's
    ``searcher.LocalSearchRunner`` is still there when asked for."""
    code = "import trialkit.searcher as s\nassert s.make_search_method and s.Create"
    assert _loaded_after(code, ("trialkit.client", "httpx"), tmp_path) == []
    asked = "import trialkit.searcher as s\nassert s.LocalSearchRunner.__module__ == 'trialkit.client._search_runner'"
    assert _loaded_after(asked, ("trialkit.client",), tmp_path) == ["trialkit.client"]
