#!/usr/bin/env bash
# Build and install Horovod 0.28.1 (Gloo + PyTorch, no MPI/TF/MXNet) into the current python's
# environment. The release does not build against torch 2.x as released (it asks for C++14;
# torch's headers need C++17: upstream horovod#3996, fixed on master, never released), so this
# downloads the sdist, sets CMAKE_CXX_STANDARD to 17 and builds it against the installed torch.
# Idempotent: does nothing when `import horovod.torch` already works. Takes ~3.5 min on 2 cores.
# Usage: bash scripts/build_horovod.sh        (PYTHON=/path/to/python to pick the interpreter)
set -euo pipefail

PY="${PYTHON:-python}"
VERSION="${HOROVOD_VERSION:-0.28.1}"

die() { echo "build_horovod.sh: error: $*" >&2; exit 1; }

command -v "$PY" >/dev/null 2>&1 || die "no '$PY' on PATH (set PYTHON=/path/to/python)"
if "$PY" -c "import horovod.torch" >/dev/null 2>&1; then
  echo "build_horovod.sh: horovod.torch already imports ($("$PY" -c 'import horovod; print(horovod.__version__)')); nothing to do"
  exit 0
fi
"$PY" -c "import torch" >/dev/null 2>&1 \
  || die "torch is not installed in $("$PY" -c 'import sys; print(sys.prefix)'); install torch==2.13.0 first (horovod builds against it)"
# The build runs without isolation: its tools come from this environment (cmake from PyPI when
# the system has none).
tools=(wheel setuptools packaging)
command -v cmake >/dev/null 2>&1 || tools+=("cmake>=3.13,<4")
"$PY" -m pip install --quiet "${tools[@]}" \
  || die "could not install the build tools (${tools[*]}) with pip"

work="$(mktemp -d "${TMPDIR:-/tmp}/build-horovod.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "build_horovod.sh: downloading the horovod==$VERSION sdist"
"$PY" -m pip download --quiet --no-deps --no-binary :all: -d "$work" "horovod==$VERSION" \
  || die "could not download the horovod==$VERSION sdist from the package index"
sdist="$(ls "$work"/horovod-*.tar.gz 2>/dev/null | head -n 1)"
[ -n "$sdist" ] || die "pip download gave no horovod-*.tar.gz in $work"
tar -xzf "$sdist" -C "$work"
src="$work/horovod-$VERSION"
[ -d "$src" ] || die "the sdist did not unpack to $src"

for f in CMakeLists.txt horovod/torch/CMakeLists.txt; do
  [ -f "$src/$f" ] || die "$f is missing from the sdist"
  sed -i -E 's/(CMAKE_CXX_STANDARD[[:space:]]+)14/\117/g' "$src/$f"
  grep -Eq 'CMAKE_CXX_STANDARD[[:space:]]+17' "$src/$f" \
    || die "could not set CMAKE_CXX_STANDARD 17 in $f (the sdist changed?)"
done

echo "build_horovod.sh: building horovod $VERSION (PyTorch + Gloo, C++17); this takes minutes"
export HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 \
  HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1
# CMake 4 refuses the bundled gloo's cmake_minimum_required(2.8.12) unless told a policy floor.
export CMAKE_POLICY_VERSION_MINIMUM=3.5
export MAKEFLAGS="${MAKEFLAGS:--j$(nproc)}"
log="$(mktemp "${TMPDIR:-/tmp}/build_horovod.XXXXXX.log")"  # kept only on failure
if ! nice -n 10 "$PY" -m pip install --no-build-isolation --no-cache-dir -v "$src" \
  >"$log" 2>&1; then
  grep -E -i -m 20 'error|fatal' "$log" >&2 || tail -n 20 "$log" >&2
  die "building horovod $VERSION failed (first errors above; full log: $log)"
fi
rm -f "$log"
"$PY" -c "import horovod.torch" \
  || die "horovod $VERSION installed but 'import horovod.torch' fails (see the error above)"
echo "build_horovod.sh: installed horovod $VERSION with PyTorch and Gloo"
