"""Check that .whl/ (scripts/gpu_wheels.sh) plus the GPU device's own packages run trialkit there.

No GPU needed. Two parts, each fails with one line per problem:

1. metadata: every wheel is for CPython 3.12 on manylinux x86-64, one version per package, the
   whole under the device tool's 64 MiB, and every ``Requires-Dist`` of every carried wheel (markers
   evaluated for CPython 3.12 on Linux x86-64) is met by a carried wheel or a package the device
   has (scripts/gpu_device_packages.txt, versions checked where recorded); the packages the GPU
   tests import (torch, torchvision, lightning, deepspeed, keras, pytest) are among them.
2. install (``--install``): a fresh Python 3.12 venv holding only device packages (the subset
   DEVICE_SUBSET below, with whatever they pull in, which must itself be on the device list), the
   wheels installed exactly as scripts/gpu_check.sh does (``pip install --no-index --no-deps
   --target``), then every carried top-level module imported (deepspeed and keras import torch:
   they are checked by metadata only), a real master started, queried and stopped from that
   target (FastAPI, uvicorn, httptools, websockets, pydantic, SQLAlchemy and alembic all run), and
   scripts/gpu_check.sh run with that 3.12: it installs the wheels itself and collects tests/gpu.

Usage: python scripts/gpu_bundle_check.py [--wheels .whl] [--install] [--python PY3.12]
"""

from __future__ import annotations

import argparse
import email.parser
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
DEVICE_LIST = ROOT / "scripts" / "gpu_device_packages.txt"
LIMIT_BYTES = 64 * 1024 * 1024
PYENV_312 = Path.home() / ".pyenv" / "versions" / "3.12.1" / "bin" / "python3"

#: What tests/gpu and the GPU benchmarks import: each must come from .whl or the device.
NEEDED_ON_DEVICE = ("trialkit", "torch", "torchvision", "lightning", "deepspeed", "keras", "pytest")

#: Device packages installed into the check's venv: those trialkit and the carried wheels import
#: without torch (the rest of the device list plays no part in that).
DEVICE_SUBSET = (
    "numpy", "psutil", "rich", "click", "httpx", "pyyaml", "packaging",
    "anyio", "h11", "markupsafe", "annotated-doc", "pytest", "pytest-timeout",
)  # fmt: skip

#: Carried top-level modules that cannot be imported without torch (checked by metadata only;
#: Keras 3's only torch-free backend, numpy, imports jax).
NEEDS_TORCH = {"deepspeed", "keras"}

#: CPython 3.12 on Linux x86-64, as the device runs it.
TARGET_ENV = {
    **default_environment(),
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "python_version": "3.12",
    "python_full_version": "3.12.3",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
}


def device_packages(path: Path = DEVICE_LIST) -> dict[str, Version | None]:
    """The device's packages: canonical name -> version where recorded."""
    out: dict[str, Version | None] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, version = line.partition("==")
        out[canonicalize_name(name)] = Version(version) if version else None
    return out


def _wheel_metadata(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as zf:
        [meta] = [
            n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1
        ]
        msg = email.parser.Parser().parsestr(zf.read(meta).decode())
    return msg.get_all("Requires-Dist") or []


def _tag_fits(tag: object) -> bool:
    interp, abi, plat = str(tag).split("-")
    python_ok = interp in ("py3", "cp312") or interp.startswith("py3")
    abi_ok = abi in ("none", "cp312", "abi3")
    plat_ok = plat == "any" or (plat.startswith("manylinux") and plat.endswith("_x86_64"))
    return python_ok and abi_ok and plat_ok


def metadata_problems(wheels_dir: Path, device: dict[str, Version | None]) -> list[str]:
    """Every reason the wheels plus the device cannot satisfy trialkit's needs (empty: fine)."""
    problems: list[str] = []
    wheels = sorted(wheels_dir.glob("*.whl"))
    if not wheels:
        return [f"{wheels_dir}: no wheels (run bash scripts/gpu_wheels.sh)"]
    carried: dict[str, Version] = {}
    requires: dict[str, list[str]] = {}
    for w in wheels:
        name, version, _, tags = parse_wheel_filename(w.name)
        if name in carried:
            problems.append(f"{w.name}: a second version of {name} ({carried[name]} too): keep one")
        carried[name] = version
        if not any(_tag_fits(t) for t in tags):
            problems.append(f"{w.name}: not installable on CPython 3.12 manylinux x86-64")
        requires[name] = _wheel_metadata(w)
    size = sum(w.stat().st_size for w in wheels)
    if size >= LIMIT_BYTES:
        problems.append(f"{wheels_dir}: {size} bytes of wheels, over the device tool's 64 MiB")
    for name in NEEDED_ON_DEVICE:
        if canonicalize_name(name) not in carried and canonicalize_name(name) not in device:
            problems.append(f"{name}: needed by tests/gpu, neither carried nor on the device")
    for owner, reqs in sorted(requires.items()):
        for text in reqs:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({**TARGET_ENV, "extra": ""}):
                continue
            problem = _unmet(req, carried, device)
            if problem:
                problems.append(f"{owner} requires {text}: {problem}")
    return problems


def _unmet(
    req: Requirement, carried: dict[str, Version], device: dict[str, Version | None]
) -> str | None:
    name = canonicalize_name(req.name)
    if name in carried:
        have = carried[name]
        return None if req.specifier.contains(have, prereleases=True) else f"carried {have}"
    if name in device:
        have_d = device[name]
        if have_d is None or req.specifier.contains(have_d, prereleases=True):
            return None
        return f"the device has {have_d}: carry a wheel that fits"
    return "missing: neither a wheel in .whl nor on the device (add it to scripts/gpu_wheels.sh)"


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    """``cmd``'s output; without PYTHONPATH unless ``env`` is given (the venv sees itself only)."""
    kw.setdefault("env", {k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    return subprocess.run(cmd, capture_output=True, text=True, **kw)  # type: ignore[call-overload, no-any-return]


def _top_level_modules(site: Path) -> list[str]:
    """Import names the carried wheels installed into ``site`` (packages and plain modules)."""
    names = set()
    for entry in site.iterdir():
        if entry.name.endswith((".dist-info", ".data")) or entry.name.startswith(("_", ".")):
            continue
        if entry.is_dir() and (entry / "__init__.py").exists():
            names.add(entry.name)
        elif entry.suffix == ".py":
            names.add(entry.stem)
        elif entry.suffix == ".so":
            names.add(entry.name.split(".")[0])
    return sorted(names - {"bin"})


PROBE = """
import importlib, os, subprocess, sys, tempfile
for name in sys.argv[1:]:
    importlib.import_module(name)
import trialkit, trialkit.master, trialkit.store, trialkit.cli, trialkit.core, trialkit.searcher
home = tempfile.mkdtemp()
env = {**os.environ, "TRIALKIT_HOME": home}
cli = [sys.executable, "-m", "trialkit.cli", "master"]
try:
    subprocess.run(cli + ["up"], env=env, check=True, timeout=60)
    subprocess.run(cli + ["status"], env=env, check=True, timeout=30)
finally:
    subprocess.run(cli + ["down"], env=env, timeout=60)
print("probe ok:", len(sys.argv) - 1, "modules, a master up, status, down")
"""


def install_problems(
    wheels_dir: Path, python: Path, device: dict[str, Version | None]
) -> list[str]:
    """Install as on the device into a fresh 3.12 venv of device packages; import and run."""
    with tempfile.TemporaryDirectory(prefix="gpu-bundle-") as tmp:
        venv, site = Path(tmp) / "venv", Path(tmp) / "site"
        r = _run([str(python), "-m", "venv", str(venv)])
        if r.returncode:
            return [f"{python} -m venv failed: {r.stderr.strip().splitlines()[-1:]}"]
        py = str(venv / "bin" / "python")
        r = _run([py, "-m", "pip", "install", "-q", *DEVICE_SUBSET])
        if r.returncode:
            return [f"installing the device subset failed: {r.stderr.strip()[-400:]}"]
        listed = _run([py, "-m", "pip", "list", "--format=freeze"]).stdout.split()
        extra = [
            n for n in (canonicalize_name(x.split("==")[0]) for x in listed) if n not in device
        ]
        if extra:
            return [f"the venv holds packages the device lacks: {extra} (fix DEVICE_SUBSET)"]
        r = _run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                  "--target", str(site), *map(str, sorted(wheels_dir.glob("*.whl")))])  # fmt: skip
        if r.returncode:
            return [f"pip install --target failed: {r.stderr.strip()[-400:]}"]
        # trialkit.launch.deepspeed runs the `deepspeed` command: gpu_check.sh puts site/bin on PATH.
        missing_bin = [c for c in ("deepspeed", "trialkit") if not (site / "bin" / c).exists()]
        if missing_bin:
            return [f"pip install --target made no {missing_bin} in {site}/bin"]
        modules = [m for m in _top_level_modules(site) if m not in NEEDS_TORCH]
        env = {**os.environ, "PYTHONPATH": str(site)}
        for name in ("TRIALKIT_CLUSTER_INFO", "TRIALKIT_HOME"):
            env.pop(name, None)
        r = _run([py, "-c", PROBE, *modules], env=env, timeout=240)
        if r.returncode:
            tail = r.stderr.strip().splitlines()[-1:] or r.stdout.strip().splitlines()[-1:]
            return [
                f"importing/running from the bundle failed: {tail[0] if tail else r.returncode}"
            ]
        print(r.stdout.strip())
        return _check_script_problems(py, Path(tmp))
    return []


def _check_script_problems(py: str, tmp: Path) -> list[str]:
    """scripts/gpu_check.sh as the device runs it, with this venv's 3.12 (no torch: every GPU
    test skips): it must install the wheels itself, collect tests/gpu and exit 0."""
    out, site = tmp / "out", tmp / "check-site"
    env = {**os.environ, "PYTHON": py, "OUT": str(out), "GPU_CHECK_SITE": str(site)}
    env.pop("PYTHONPATH", None)
    r = _run(["bash", str(ROOT / "scripts" / "gpu_check.sh")], env=env, timeout=300)
    summary = (out / "summary.txt").read_text() if (out / "summary.txt").exists() else ""
    if r.returncode or "installed into" not in summary or not (out / "junit.xml").exists():
        return [f"scripts/gpu_check.sh failed (rc {r.returncode}): {(r.stdout + r.stderr)[-600:]}"]
    print("gpu_check.sh on 3.12 without torch:", summary.splitlines()[3:4])
    return []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--wheels", type=Path, default=ROOT / ".whl")
    ap.add_argument("--install", action="store_true", help="also install into a fresh 3.12 venv")
    ap.add_argument("--python", type=Path, default=PYENV_312, help="a CPython 3.12")
    args = ap.parse_args(argv)
    device = device_packages()
    problems = metadata_problems(args.wheels, device)
    if not problems and args.install:
        problems = install_problems(args.wheels, args.python, device)
    for p in problems:
        print(f"gpu bundle: {p}", file=sys.stderr)
    if problems:
        return 1
    n = len(list(args.wheels.glob("*.whl")))
    print(f"gpu bundle ok: {n} wheels + the device's packages meet every requirement")
    return 0


if __name__ == "__main__":
    sys.exit(main())
