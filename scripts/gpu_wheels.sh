#!/usr/bin/env bash
# Fill .whl/ (ignored) with every wheel trialkit needs on the GPU device machine that its image
# lacks (scripts/gpu_device_packages.txt), for CPython 3.12 manylinux x86-64: the pinned wheels
# below, trialkit itself built here, DeepSpeed as a pure-Python wheel built here from its sdist
# (DS_BUILD_OPS=0: its ops JIT-build with nvcc on the device), Keras 3 for the torch backend.
# One version of each; under 64 MiB with the repository's tracked files, or this fails.
# Usage: bash scripts/gpu_wheels.sh        (PYTHON: an interpreter with torch, setuptools, wheel)
# Then:  python scripts/gpu_bundle_check.py   (completeness in a fresh 3.12 env, no GPU needed)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-$( [ -x /work/venv/bin/python ] && echo /work/venv/bin/python || command -v python3 )}
DEST=.whl
CACHE=.whl-cache  # the DeepSpeed wheel, built once per version (~1 min), kept between runs
LIMIT_BYTES=$((64 * 1024 * 1024))

DEEPSPEED_VERSION=0.19.8
# What the device lacks, pinned to the versions the CPU suite runs with. typing-extensions is
# on the device but carried: pydantic 2.14 needs >=4.16, newer than the image may hold.
PINNED=(
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0
  typing-extensions==4.16.0 typing-inspection==0.4.5
  SQLAlchemy==2.1.9 alembic==1.20.1 Mako==1.4.3
  fastapi==0.165.0 starlette==1.10.0 opentelemetry-api==1.45.2
  uvicorn==0.54.0 httptools==0.9.0 websockets==17.4
  zlib-ng==1.1.0 google-crc32c==1.9.0
  hjson==3.1.0
  keras==3.15.1 namex==0.1.0 optree==0.20.0
)
PLATFORMS=(manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64
           manylinux1_x86_64)

die() { echo "gpu_wheels.sh: $*" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

echo "downloading ${#PINNED[@]} pinned wheels for cp312 manylinux x86-64"
"$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${PLATFORMS[@]/#/--platform=}" -d "$stage" "${PINNED[@]}" \
  || die "pip download failed (network, or a pin without a cp312 manylinux wheel)"

echo "building trialkit's wheel"
"$PYTHON" -m pip wheel --quiet --no-deps --no-build-isolation -w "$stage" . \
  || die "building trialkit's wheel failed"

ds_wheel="$CACHE/deepspeed-$DEEPSPEED_VERSION-py3-none-any.whl"
if [ ! -f "$ds_wheel" ]; then
  echo "building DeepSpeed $DEEPSPEED_VERSION as a pure-Python wheel (DS_BUILD_OPS=0)"
  "$PYTHON" -c "import torch" 2>/dev/null || die "$PYTHON cannot import torch: DeepSpeed's setup.py needs it; set PYTHON"
  mkdir -p "$CACHE"
  "$PYTHON" -m pip download --quiet --no-deps --no-binary=:all: -d "$stage/sdist" \
    "deepspeed==$DEEPSPEED_VERSION" || die "downloading DeepSpeed's sdist failed"
  DS_BUILD_OPS=0 "$PYTHON" -m pip wheel --quiet --no-deps --no-build-isolation -w "$stage/ds" \
    "$stage"/sdist/deepspeed-*.tar.gz || die "building DeepSpeed's wheel failed"
  built=("$stage"/ds/deepspeed-*.whl)
  case "${built[0]}" in *-py3-none-any.whl) ;; *) die "DeepSpeed built ${built[0]}, not a pure-Python wheel" ;; esac
  mv "${built[0]}" "$ds_wheel"
fi
cp "$ds_wheel" "$stage/"

# Replace .whl as a whole: a wheel left from an older pin would make two versions of one package.
rm -rf "$DEST"
mkdir -p "$DEST"
mv "$stage"/*.whl "$DEST/"

wheels_bytes=$(du -cb "$DEST"/*.whl | tail -1 | cut -f1)
tree_bytes=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
total=$((wheels_bytes + tree_bytes))
echo "$(ls "$DEST" | wc -l) wheels, $((wheels_bytes / 1024)) KiB; with the tracked tree $((total / 1024)) KiB of $((LIMIT_BYTES / 1024))"
[ "$total" -lt "$LIMIT_BYTES" ] || die "wheels + tracked tree are $total bytes, over the device tool's 64 MiB"
