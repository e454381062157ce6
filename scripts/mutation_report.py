"""Summarise the last ``mutmut run`` (``tox -e mutate``): the kill rate over the mutants that
were checked, then every survivor, marking those tests/mutation_equivalents.md lists as
equivalent (they behave exactly as the original, so no test can kill them)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

EQUIVALENTS = Path(__file__).resolve().parents[1] / "tests" / "mutation_equivalents.md"
KILLED = {"killed", "timeout", "caught by type check", "segfault"}
NOT_KILLED = {"survived", "no tests", "suspicious"}


def statuses() -> dict[str, str]:
    """mutant name -> status, for every mutant mutmut knows of."""
    out = subprocess.run(
        [sys.executable, "-m", "mutmut", "results", "--all", "true"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(
        (m.group(1), m.group(2)) for m in re.finditer(r"^\s+(\S+): (.+)$", out, re.MULTILINE)
    )


def equivalents() -> set[str]:
    """The mutant names in the list (each line starts with one, in backticks)."""
    if not EQUIVALENTS.exists():
        return set()
    return set(re.findall(r"^- `([^`]+)`", EQUIVALENTS.read_text(), re.MULTILINE))


def main() -> int:
    status = {name: s for name, s in statuses().items() if s != "not checked"}
    if not status:
        print("no mutant checked yet: run `mutmut run` (tox -e mutate) first")
        return 1
    counts = Counter(status.values())
    equivalent = equivalents()
    killed = sum(n for s, n in counts.items() if s in KILLED)
    alive = [name for name, s in sorted(status.items()) if s in NOT_KILLED]
    real = [name for name in alive if name not in equivalent]
    print(
        f"{len(status)} mutants checked: " + ", ".join(f"{n} {s}" for s, n in counts.most_common())
    )
    print(f"kill rate: {killed}/{len(status)} = {killed / len(status):.1%}")
    if alive:
        rate = killed / (killed + len(real))
        print(f"kill rate without the {len(alive) - len(real)} listed equivalents: {rate:.1%}")
        print("survivors (`mutmut show NAME` prints the change):")
        for name in alive:
            note = " (equivalent)" if name in equivalent else ""
            print(f"  {name}: {status[name]}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
