#!/usr/bin/env bash
# The one GPU check: install .whl (scripts/gpu_wheels.sh) into a private target (never touching the
# machine's torch), run tests/gpu (marker gpu) and the GPU benchmarks, and write to $OUT:
#   summary.txt (environment, test counts, each skip's reason, benchmark figures), junit.xml,
#   pytest.log, bench.log.
# Ends inside 8 minutes (each step has a timeout, cut to what the overall budget has left). Without
# CUDA it runs the tests anyway (each skips, saying why), skips the benchmarks saying so, and exits
# 0 unless a test failed. Usage: bash scripts/gpu_check.sh   (OUT defaults to a temp dir;
# PYTHON to python3; GPU_CHECK_BUDGET_S to 460). To re-run a part: GPU_CHECK_TESTS (pytest
# arguments, default tests/gpu; "none" runs no test) and GPU_CHECK_BENCHES (an extended regex the
# benchmark command must match; default every one; "none" runs none).
set -uo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-$(mktemp -d -t trialkit-gpu-check.XXXXXX)}
mkdir -p "$OUT"
PYTHON=${PYTHON:-python3}
BUDGET_S=${GPU_CHECK_BUDGET_S:-460}
SITE=${GPU_CHECK_SITE:-/tmp/trialkit-gpu-site}
SUMMARY="$OUT/summary.txt"
START=$SECONDS
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export TRIALKIT_HOME=${TRIALKIT_HOME:-$(mktemp -d -t trialkit-gpu-home.XXXXXX)}
: >"$SUMMARY"

say() { echo "$*" | tee -a "$SUMMARY"; }
left() { echo $((BUDGET_S - (SECONDS - START))); }
# step_timeout WANTED: WANTED seconds, or what the budget has left less 20 s for the summary.
step_timeout() { local l; l=$(($(left) - 20)); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }

say "trialkit GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), budget ${BUDGET_S}s"

# 1. The wheels: only into a 3.12 interpreter (they are built for CPython 3.12, the device's).
py_minor=$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
if [ "$py_minor" = "3.12" ] && compgen -G ".whl/*.whl" >/dev/null; then
  if timeout "$(step_timeout 90)" "$PYTHON" -m pip install -q --no-index --no-deps --no-compile \
      --no-cache-dir --upgrade --target "$SITE" .whl/*.whl; then
    # src/ first: the tree's trialkit is what runs even when .whl was built from an older tree
    # (its wheel brings the dependencies and the console scripts).
    export PYTHONPATH="$PWD/src:$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
    export PATH="$SITE/bin:$PATH"  # the wheels' commands: trialkit, deepspeed (its launcher runs it)
    say "wheels: $(ls .whl/*.whl | wc -l) from .whl installed into $SITE"
  else
    say "wheels: FAILED to install .whl into $SITE"; exit 2
  fi
else
  export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}"
  say "wheels: not installed (python $py_minor; .whl is for 3.12 and has $(ls .whl/*.whl 2>/dev/null | wc -l) wheels): using this tree's src/ and the installed packages"
fi

# 2. What the tests will see.
env_line=$("$PYTHON" - <<'EOF' 2>&1
import importlib, platform
parts = [f"python {platform.python_version()}"]
import os
os.environ.setdefault("KERAS_BACKEND", "torch")  # the backend the device has (no TensorFlow)
for name in ("torch", "torchvision", "lightning", "deepspeed", "keras", "trialkit"):
    try:
        parts.append(f"{name} {importlib.import_module(name).__version__}")
    except Exception as e:  # noqa: BLE001 - report whatever keeps it from importing
        parts.append(f"{name} missing ({type(e).__name__})")
try:
    import torch
    if torch.cuda.is_available():
        n = torch.cuda.device_count()
        parts.append(f"CUDA {torch.version.cuda}, {n} x {torch.cuda.get_device_name(0)}")
        parts.append(f"TORCH_CUDA_ARCH_LIST={os.environ.get('TORCH_CUDA_ARCH_LIST', '(unset)')}")
    else:
        parts.append("no CUDA")
except ImportError:
    parts.append("no CUDA (no torch)")
print(", ".join(parts))
EOF
)
say "environment: $env_line"
case "$env_line" in *"no CUDA"*) cuda=0 ;; *) cuda=1 ;; esac
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version \
  --format=csv,noheader 2>/dev/null | sed 's/^/nvidia-smi: /' | tee -a "$SUMMARY"

# 3. The GPU tests.
# Four workers where pytest-xdist is there (the device has it): the tests use their own homes,
# ports and processes, and one GPU's memory holds them all; serially they would take ~5 minutes.
parallel=()
[ "$cuda" = 1 ] && "$PYTHON" -c "import xdist" 2>/dev/null && parallel=(-n 4)
TESTS=${GPU_CHECK_TESTS:-tests/gpu}
t=$(step_timeout 300)
if [ "$TESTS" = none ]; then
  tests_rc=0; say "tests: none asked for (GPU_CHECK_TESTS=none)"
else
  # shellcheck disable=SC2086  # $TESTS is a list of pytest arguments
  timeout -k 10 "$t" "$PYTHON" -m pytest -p no:cacheprovider -m gpu $TESTS -q -rs "${parallel[@]}" \
    --timeout 150 --junitxml="$OUT/junit.xml" >"$OUT/pytest.log" 2>&1
  tests_rc=$?
  # 5: nothing collected, as when every selected module skips (its framework is missing): skips do
  # not fail the check
  [ "$tests_rc" = 5 ] && tests_rc=0
  outcome=$(grep -E '^(=+ )?[0-9]+ (passed|failed|skipped|error)' "$OUT/pytest.log" | tail -1 | tr -d '=')
  # no count line: pytest stopped before running anything (an import error, a usage error); its
  # first error line says why
  [ -n "$outcome" ] || outcome="no tests ran: $( (grep -m1 '^E ' "$OUT/pytest.log" || tail -1 "$OUT/pytest.log") | sed 's/^E *//')"
  say "tests (rc $tests_rc, ${t}s allowed${parallel:+, 4 workers}): $outcome"
  [ "$tests_rc" = 124 ] && say "tests: TIMED OUT after ${t}s"
  grep -E '^(FAILED|ERROR) ' "$OUT/pytest.log" | tee -a "$SUMMARY"
  grep -E '^SKIPPED ' "$OUT/pytest.log" | sed 's/^/  /' | tee -a "$SUMMARY"
fi

# 4. The GPU benchmarks: each prints its ratios against a baseline measured in the same run.
# Most telling first: a bench that would outrun the budget is skipped, saying so. "SECONDS|cmd".
BENCHES=(
  "90|bench/pytorch_slope.py --device cuda --rounds 3"
  "45|bench/checkpoint_save_load.py --device cuda --mb 500 --rounds 2"
  "100|bench/deepspeed_overhead.py --device cuda --rounds 2 --batches 200 --width 2048"
  "150|bench/lightning_overhead.py --device cuda --rounds 2 --batches 300 --width 2048"
)
: >"$OUT/bench.log"
if [ "$cuda" = 1 ]; then
  for entry in "${BENCHES[@]}"; do
    b=${entry#*|}
    [[ "$b" =~ ${GPU_CHECK_BENCHES:-.} ]] || continue
    t=$(step_timeout "${entry%%|*}")
    if [ "$t" -lt 15 ]; then say "bench skipped (budget spent): $b"; continue; fi
    one=$(mktemp)
    # shellcheck disable=SC2086  # $b is a command line
    timeout -k 5 "$t" "$PYTHON" $b >"$one" 2>&1
    rc=$?
    { echo "=== $b (rc $rc)"; cat "$one"; } >>"$OUT/bench.log"
    say "bench $b: rc $rc$([ $rc = 124 ] && echo " (timed out at ${t}s)")"
    tail -n 8 "$one" | sed 's/^/  /' | tee -a "$SUMMARY"  # its ratio table and verdict
    rm -f "$one"
  done
else
  say "benchmarks skipped: no CUDA on this machine ($(printf '%s; ' "${BENCHES[@]#*|}"))"
fi

say "done in $((SECONDS - START))s; files in $OUT"
# Test failures fail the check; skips (no CUDA, no deepspeed) do not.
[ "$tests_rc" = 0 ] || exit 1
exit 0
