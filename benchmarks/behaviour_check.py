"""Behaviour preservation across a refactor (issue 33): record what the command line prints, check it again.

    .venv/bin/python benchmarks/behaviour_check.py --record benchmarks/results/behaviour --wipe-graph
    .venv/bin/python benchmarks/behaviour_check.py --check benchmarks/results/behaviour --wipe-graph

``--record DIR`` runs a fixed list of probes and writes one text file per probe under DIR and ``index.json``
(each probe's command and the sha256 of its file).  ``--check DIR`` reruns the probes the index lists and
prints, per probe, the recorded and the current sha256 side by side with ``same`` or ``DIFFERENT``, then a
unified diff excerpt of the first differing lines of each probe that differs; exit 1 when any differs.
Progress goes to stderr.  ``--only SUBSTRING`` (repeatable) runs the probes whose name contains it, with the
probes they read files from.

Every probe is a subprocess of the real command line: ``python -c 'from ace.cli import main; main()'``,
what ``.venv/bin/ace`` runs (``ace = "ace.cli:main"``), with ``PYTHONPATH`` set to the repository this
script lives in, its working directory there, ``ACE_HOME`` a fresh temporary folder, ``COLUMNS=200`` (Rich
tables the same width everywhere), ``OMP_NUM_THREADS=1``, ``PYTHONHASHSEED=0``, ``NO_COLOR=1``, ``TERM=dumb``,
and none of the caller's other ``ACE_*`` and ``NEO4J_*`` variables (``ACE_MODELS`` is kept; the graph's
``NEO4J_*`` are set from where the caller's environment points).  So the probes run whatever code the
checkout holds.  A probe's file holds its command (with ``{tmp}`` for the temporary folder), its exit status, its
stdout and stderr, and for each file it writes that the probe names: its size, its sha256 and its text
(the first 64 KiB; past that only the sha256 is compared).

What the probes cover (numbers are sizes chosen to keep a run to a few minutes on 2 loaded cores):

* ``ace sim rollouts``: BFCL (all 800 tasks, the demo's weakness file) and τ² airline (its weakness file),
  fixed seeds; the files are the inputs of the verify and ingest probes.
* ``ace verify --json``, with and without ``--strict``: those simulated rollouts (BFCL, τ² airline), files
  of tests/corpus/rollouts (hostile inputs that verify: injected code, NFKC look-alike names, OpenAI
  messages with bad arguments; four bad files with ``--skip-invalid``), and τ²-bench's published result
  files (benchmarks/data/tau2-results: gpt-4.1 airline and retail).  The corpus files that need a tool
  call to run over its time budget are left out: whether it does depends on the machine's load.
* ``ace env replay --json``: BFCL (all four categories) and τ² airline.
* ``ace export --json`` of fixed task sets in each format: bfcl:base as bfcl, trl and openai-sft, and
  tau2:airline as tau2; every file written is recorded.
* With a graph (``--wipe-graph``): ``ace init``, ``ace ingest --strict --json`` of the simulated rollouts,
  ``ace synth --json`` for fixed seeds on BFCL and on τ² airline (the simulated agent as the policy), the
  synthesized task files recorded; then ``make demo``'s sections: ``ace demo`` at reduced size
  (``--n 400 --synth 6 --tau2-n 100``; the default size takes far longer than a check should on this
  machine), its text output (sections 1-7: replay, skill graph, weaknesses, synthesis, curriculum,
  round 1, τ², real agents) and a second run with ``--json`` (every stage's data; the rerun also shows
  the demo's idempotence: everything already stored).  ``make demo``'s last part, one round of
  ``ace loop`` training a real model, is not probed: it takes tens of minutes on 2 cores and its numbers
  depend on floating-point training.

The graph probes wipe the Neo4j database the environment points at (``NEO4J_URI``, or the managed server
of ``ACE_HOME``) before the first of them and before the demo, so each starts from an empty graph:
``--wipe-graph`` says that is fine.  Use a server of your own.

Normalization (applied to stdout, stderr and recorded files before they are compared or written; nothing
else is changed), in this order:

1. the temporary folder's path becomes ``{tmp}``, the repository's path ``{repo}``, the Neo4j URI ``{neo4j}``:
   they differ per run and per checkout (the lead's checkout, other ports);
2. durations: the number of any JSON key ending in ``seconds``, ``_s`` or ``per_s`` (``seconds``,
   ``tasks_per_s``), and every number of a flat object under a key ending in ``seconds`` (ingest's
   ``phase_seconds``), becomes ``<num>``; in text, a number followed by `` s`` (``12.3 s``) becomes
   ``<num> s`` (fixed texts too, such as a verdict's "over the 10 s budget"): wall-clock time varies run
   to run;
3. rates: the replay table's tasks/s cell (the last cell of a row that starts with a BFCL category) becomes
   ``<num>``: it is a rate per second;
4. dates and times (ISO 8601 ``2026-12-06T22:14:13``, with fraction and zone) become ``<datetime>``;
5. table padding: Rich sizes a column to its widest cell, so a timing cell's width moves the borders of the
   whole table; in lines that hold box-drawing characters, runs of spaces and runs of one rule character
   (``━``, ``─``, ``═``) are collapsed to one.  Only layout is lost: every cell's text is kept.

Determinism was checked by recording twice into two folders and comparing them byte for byte (see
benchmarks/RESULTS.md).  The unit test of the pure parts is tests/unit/test_behaviour_check.py.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
try:  # the script's one import of ACE: where the graph is (the managed server's password included)
    from ace_graph.config import neo4j_settings  # noqa: E402
except ImportError:  # moved by a refactor: then NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD name the graph
    neo4j_settings = None

#: How much of a written file a probe keeps as text (its sha256 covers all of it).
EXCERPT_BYTES = 64 * 1024
#: Seconds one probe may run.
PROBE_TIMEOUT = 900
#: The command line, as ``.venv/bin/ace`` runs it.
ACE = (sys.executable, "-c", "import sys; from ace.cli import main; sys.argv[0] = 'ace'; sys.exit(main())")

BFCL_WEAKNESS = "ace_env/demo_weakness.toml"
TAU2_WEAKNESS = "ace_env/tau2_airline_weakness.toml"
TAU2_RESULTS = "benchmarks/data/tau2-results"
CORPUS = "tests/corpus/rollouts"


@dataclass(frozen=True)
class Probe:
    """One command of the real CLI; ``{tmp}`` in its arguments is the run's temporary folder."""

    name: str
    args: tuple[str, ...]
    files: tuple[str, ...] = ()  # files or folders under {tmp} it writes, recorded
    after: tuple[str, ...] = ()  # probes whose files it reads
    graph: bool = False  # needs Neo4j
    wipe: bool = False  # wipe the graph first


def _verify(name: str, paths: list[str], extra: tuple[str, ...] = (), after: tuple[str, ...] = ()) -> list[Probe]:
    """``ace verify --json`` on ``paths``, then the same with ``--strict``."""
    return [Probe(f"verify-{name}", ("verify", "--json", *extra, *paths), after=after),
            Probe(f"verify-{name}-strict", ("verify", "--json", "--strict", *extra, *paths), after=after)]


def probes() -> list[Probe]:
    """The fixed probe list, in the order it runs (a probe runs after those whose files it reads)."""
    bfcl_sim, tau2_sim = "{tmp}/bfcl-sim.jsonl", "{tmp}/tau2-sim.jsonl"
    out = [
        Probe("sim-bfcl", ("sim", "rollouts", "--tasks", "bfcl:all", "--n", "600", "--seed", "11",
                           "--weakness", BFCL_WEAKNESS, "--out", bfcl_sim, "--json"), files=("bfcl-sim.jsonl",)),
        Probe("sim-tau2", ("sim", "rollouts", "--tasks", "tau2:airline", "--n", "300", "--seed", "5",
                           "--weakness", TAU2_WEAKNESS, "--out", tau2_sim, "--json"), files=("tau2-sim.jsonl",)),
        *_verify("bfcl-sim", [bfcl_sim], ("--tasks", "bfcl:all"), after=("sim-bfcl",)),
        *_verify("tau2-sim", [tau2_sim], ("--tasks", "tau2:airline"), after=("sim-tau2",)),
        *_verify("corpus", [f"{CORPUS}/{f}.jsonl" for f in ("code_injection", "nfkc_names", "openai_bad_arguments")],
                 ("--tasks", "bfcl:all")),
        Probe("verify-corpus-skip-invalid", ("verify", "--json", "--skip-invalid", "--tasks", "bfcl:all",
                                             *(f"{CORPUS}/{f}.jsonl" for f in ("not_a_call_object", "unknown_task",
                                                                               "deep_arguments_491", "duplicate_json_key")))),
        *_verify("tau2-results-airline", [f"{TAU2_RESULTS}/gpt-4.1_airline_1trial.json"]),
        *_verify("tau2-results-retail", [f"{TAU2_RESULTS}/gpt-4.1_retail_1trial.json"]),
        Probe("env-replay-bfcl", ("env", "replay", "bfcl", "--json")),
        Probe("env-replay-tau2-airline", ("env", "replay", "tau2", "--tasks", "tau2:airline", "--json")),
        *[Probe(f"export-bfcl-base-{fmt}", ("export", "--tasks", "bfcl:base", "--format", fmt,
                                            "--out", f"{{tmp}}/export-{fmt}", "--json"), files=(f"export-{fmt}",))
          for fmt in ("bfcl", "trl", "openai-sft")],
        Probe("export-tau2-airline-tau2", ("export", "--tasks", "tau2:airline", "--format", "tau2",
                                           "--out", "{tmp}/export-tau2", "--json"), files=("export-tau2",)),
        # -- with a graph
        Probe("init", ("init",), graph=True, wipe=True),
        Probe("ingest-bfcl-sim", ("ingest", "--scope", "bc/sim/round-0", "--tasks", "bfcl:all", "--strict",
                                  "--json", bfcl_sim), graph=True, after=("sim-bfcl",)),
        *[Probe(f"synth-bfcl-seed{seed}", ("synth", "-e", "bc", "--n", "8", "--seed", str(seed),
                                           "--policy", f"sim:{BFCL_WEAKNESS}", "--out", f"{{tmp}}/synth-bfcl-{seed}.jsonl",
                                           "--json"), files=(f"synth-bfcl-{seed}.jsonl",), graph=True,
                after=("ingest-bfcl-sim",)) for seed in (3, 4)],
        Probe("ingest-tau2-sim", ("ingest", "--scope", "bct/sim/round-0", "--tasks", "tau2:airline", "--strict",
                                  "--json", tau2_sim), graph=True, after=("sim-tau2",)),
        *[Probe(f"synth-tau2-seed{seed}", ("synth", "-e", "bct", "--tasks", "tau2:airline", "--n", "6",
                                           "--seed", str(seed), "--policy", f"sim:{TAU2_WEAKNESS}",
                                           "--out", f"{{tmp}}/synth-tau2-{seed}.jsonl", "--json"),
                files=(f"synth-tau2-{seed}.jsonl",), graph=True, after=("ingest-tau2-sim",)) for seed in (3, 4)],
    ]
    demo = ("demo", "--n", "400", "--synth", "6", "--tau2-n", "100", "-e", "bd")
    out += [Probe("demo", demo, graph=True, wipe=True),
            Probe("demo-rerun-json", (*demo, "--json"), graph=True, after=("demo",))]
    return out


# -- normalization ------------------------------------------------------------------------------------------

_DATETIME = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
_JSON_DURATION = re.compile(r'("(?:[A-Za-z0-9_]*seconds|[A-Za-z0-9_]*_s|[A-Za-z0-9_]*per_s)"\s*:\s*)'
                            r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_JSON_DURATION_OBJECT = re.compile(r'("[A-Za-z0-9_]*seconds"\s*:\s*)(\{[^{}]*\})')
_JSON_NUMBER_VALUE = re.compile(r"(:\s*)-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_TEXT_DURATION = re.compile(r"(?<![\w.])\d+(?:\.\d+)? s\b")
_RATE_ROW = re.compile(r"^(\s*│\s*(?:base|long_context|miss_func|miss_param)\s*│(?:\s*\d+\s*│){4}\s*)"
                       r"\d+(?:\.\d+)?(\s*│)", re.M)
_BOX = re.compile(r"[│┃┏┓┗┛┡┩┣┫┳┻╇╋━─═╭╮╰╯┼├┤┬┴]")
_RULE_RUN = re.compile(r"([━─═])\1+")
_SPACE_RUN = re.compile(r" {2,}")


def normalize(text: str, replacements: dict[str, str] | None = None) -> str:
    """``text`` with what varies from run to run replaced, as the module doc lists (steps 1-5)."""
    for old, new in sorted((replacements or {}).items(), key=lambda kv: -len(kv[0])):
        if old:
            text = text.replace(old, new)
    text = _JSON_DURATION.sub(r"\1<num>", text)
    text = _JSON_DURATION_OBJECT.sub(lambda m: m[1] + _JSON_NUMBER_VALUE.sub(r"\1<num>", m[2]), text)
    text = _TEXT_DURATION.sub("<num> s", text)
    text = _RATE_ROW.sub(r"\1<num>\2", text)
    text = _DATETIME.sub("<datetime>", text)
    lines = []
    for line in text.split("\n"):
        if _BOX.search(line):
            line = _SPACE_RUN.sub(" ", _RULE_RUN.sub(r"\1", line))
        lines.append(line)
    return "\n".join(lines)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# -- a probe's record -----------------------------------------------------------------------------------------

def render(probe: Probe, rc: int, stdout: str, stderr: str, files: list[tuple[str, bytes]],
           replacements: dict[str, str]) -> str:
    """A probe's file: command, exit status, stdout, stderr and the files it wrote, normalized."""
    parts = [f"# probe {probe.name}", "# command: ace " + " ".join(probe.args), f"# exit {rc}",
             "## stdout", normalize(stdout, replacements), "## stderr", normalize(stderr, replacements)]
    for rel, data in files:
        text = normalize(data.decode("utf-8", errors="replace"), replacements)
        excerpt = text.encode("utf-8")[:EXCERPT_BYTES].decode("utf-8", errors="ignore")
        cut = "" if len(excerpt) == len(text) else f", first {EXCERPT_BYTES} bytes shown"
        parts += [f"## file {rel} ({len(data)} bytes, sha256 of the normalized text {sha256(text)}{cut})", excerpt]
    return "\n".join(parts) + "\n"


def written(tmp: Path, names: tuple[str, ...]) -> list[tuple[str, bytes]]:
    """The files a probe names under ``tmp`` (a folder: every file in it, sorted), as (path, bytes)."""
    out = []
    for name in names:
        path = tmp / name
        paths = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for p in paths:
            out.append((str(p.relative_to(tmp)), p.read_bytes() if p.is_file() else b"<missing>"))
    return out


def index_of(records: dict[str, str], commands: dict[str, str]) -> dict[str, Any]:
    """The index of a record folder: per probe, its file, command and the sha256 of its file's text."""
    return {"probes": [{"name": name, "file": f"{name}.txt", "command": commands[name], "sha256": sha256(text)}
                       for name, text in records.items()]}


def compare(recorded: dict[str, str], current: dict[str, str]) -> list[tuple[str, str, str, bool]]:
    """Per recorded probe: (name, recorded sha256, current sha256 or 'missing', same?)."""
    rows = []
    for name, text in recorded.items():
        now = current.get(name)
        rows.append((name, sha256(text), sha256(now) if now is not None else "missing", now == text))
    return rows


def diff_excerpt(old: str, new: str, name: str, lines: int = 30, width: int = 300) -> list[str]:
    """The first ``lines`` lines of the unified diff of a probe's recorded and current text.  A line longer
    than ``width`` is cut; a changed line is cut around the first character where it differs from the line
    that replaced it (a JSON verdict line is long, and the difference can be anywhere in it)."""
    diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"recorded/{name}", f"current/{name}",
                                     n=2, lineterm=""))[:lines + 1]
    starts = [0] * len(diff)
    i = 2
    while i < len(diff):
        j = i
        while j < len(diff) and diff[j].startswith("-"):
            j += 1
        k = j
        while k < len(diff) and diff[k].startswith("+"):
            k += 1
        for a, b in zip(range(i, j), range(j, k)):
            same = len(os.path.commonprefix([diff[a][1:], diff[b][1:]]))
            starts[a] = starts[b] = max(0, same - width // 3)
        i = max(k, i + 1)
    out = []
    for line, start in zip(diff, starts):
        body = line[1 + start:] if start else line[1:]
        cut = body[:width] + (" …" if len(body) > width else "")
        out.append(line[0] + ("… " if start else "") + cut if line else line)
    if len(out) > lines:
        out = out[:lines] + ["… (diff cut)"]
    return out


def select(all_probes: list[Probe], only: list[str]) -> list[Probe]:
    """The probes whose name contains one of ``only`` (all without it), with those they read files from."""
    if not only:
        return list(all_probes)
    by_name = {p.name: p for p in all_probes}
    wanted: set[str] = set()
    todo = [p.name for p in all_probes if any(o in p.name for o in only)]
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            todo.extend(by_name[name].after)
    return [p for p in all_probes if p.name in wanted]


# -- running ------------------------------------------------------------------------------------------------

def _neo4j() -> tuple[str, str, str | None, str]:
    """(uri, user, password, database) of the graph the environment names."""
    if neo4j_settings is None:
        if not os.environ.get("NEO4J_URI"):
            raise SystemExit("error: ace_graph.config.neo4j_settings is gone: set NEO4J_URI, NEO4J_USER and "
                             "NEO4J_PASSWORD for the graph probes")
        return (os.environ["NEO4J_URI"], os.environ.get("NEO4J_USER", "neo4j"), os.environ.get("NEO4J_PASSWORD"),
                os.environ.get("NEO4J_DATABASE", "neo4j"))
    s = neo4j_settings()
    return s.uri, s.user, s.password, s.database


def _wipe(uri: str, user: str, password: str | None, database: str) -> None:
    import neo4j

    with neo4j.GraphDatabase.driver(uri, auth=(user, password or "")) as driver:
        with driver.session(database=database) as s:
            s.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()


def run_probes(selected: list[Probe], wipe_graph: bool) -> dict[str, str]:
    """Run ``selected`` in order; their normalized records by name."""
    graph = any(p.graph for p in selected)
    if graph and not wipe_graph:
        raise SystemExit("error: the graph probes (init, ingest, synth, demo) wipe the Neo4j database this "
                         "environment points at: pass --wipe-graph (with a server of your own), or --only others")
    neo = _neo4j() if graph else None
    tmp = Path(tempfile.mkdtemp(prefix="ace-behaviour-"))
    home = tmp / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACE_", "NEO4J_"))}
    env.update({"PYTHONPATH": str(ROOT), "ACE_HOME": str(home), "COLUMNS": "200", "OMP_NUM_THREADS": "1",
                "ACE_TORCH_THREADS": "1", "PYTHONHASHSEED": "0", "NO_COLOR": "1", "TERM": "dumb"})
    if "ACE_MODELS" in os.environ:
        env["ACE_MODELS"] = os.environ["ACE_MODELS"]
    replacements = {str(tmp): "{tmp}", os.path.realpath(tmp): "{tmp}", str(ROOT): "{repo}"}
    if neo is not None:
        env.update({"NEO4J_URI": neo[0], "NEO4J_USER": neo[1], "NEO4J_PASSWORD": neo[2] or "",
                    "NEO4J_DATABASE": neo[3]})
        replacements[neo[0]] = "{neo4j}"
    records: dict[str, str] = {}
    try:
        for i, probe in enumerate(selected, 1):
            start = time.perf_counter()
            print(f"[{i}/{len(selected)}] {probe.name} ...", end="", file=sys.stderr, flush=True)
            if probe.wipe:
                _wipe(*neo)
            args = [a.replace("{tmp}", str(tmp)) for a in probe.args]
            p = subprocess.run([*ACE, *args], cwd=ROOT, env=env, capture_output=True,
                               stdin=subprocess.DEVNULL, timeout=PROBE_TIMEOUT)
            records[probe.name] = render(probe, p.returncode, p.stdout.decode("utf-8", "replace"),
                                         p.stderr.decode("utf-8", "replace"), written(tmp, probe.files),
                                         replacements)
            print(f" exit {p.returncode}, {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return records


def record(directory: Path, only: list[str], wipe_graph: bool) -> int:
    selected = select(probes(), only)
    start = time.perf_counter()
    records = run_probes(selected, wipe_graph)
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*.txt"):
        old.unlink()
    for name, text in records.items():
        (directory / f"{name}.txt").write_text(text, encoding="utf-8")
    commands = {p.name: "ace " + " ".join(p.args) for p in selected}
    (directory / "index.json").write_text(json.dumps(index_of(records, commands), indent=1) + "\n", encoding="utf-8")
    print(f"recorded {len(records)} probes in {directory} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return 0


def load_records(directory: Path) -> dict[str, str]:
    """The records an index lists, refused when a file does not match its index entry."""
    index = json.loads((directory / "index.json").read_text(encoding="utf-8"))
    out = {}
    for entry in index["probes"]:
        text = (directory / entry["file"]).read_text(encoding="utf-8")
        if sha256(text) != entry["sha256"]:
            raise SystemExit(f"error: {directory / entry['file']} does not match its sha256 in index.json")
        out[entry["name"]] = text
    return out


def check(directory: Path, only: list[str], wipe_graph: bool) -> int:
    recorded = load_records(directory)
    known = {p.name for p in probes()}
    unknown = sorted(set(recorded) - known)
    if unknown:
        raise SystemExit(f"error: the snapshot has probes this script does not know: {', '.join(unknown)}")
    selected = [p for p in select(probes(), only) if p.name in recorded]
    compared = {p.name for p in select(probes(), only)} if only else set(recorded)
    recorded = {k: v for k, v in recorded.items() if k in compared}
    current = run_probes(selected, wipe_graph)
    rows = compare(recorded, current)
    width = max(len(r[0]) for r in rows)
    print(f"{'probe':<{width}}  {'recorded':<12}  {'current':<12}  result")
    for name, old, new, same in rows:
        print(f"{name:<{width}}  {old[:12]:<12}  {new[:12]:<12}  {'same' if same else 'DIFFERENT'}")
    differ = [r[0] for r in rows if not r[3]]
    for name in differ:
        print()
        print("\n".join(diff_excerpt(recorded[name], current.get(name, ""), name)))
    print(f"\n{len(rows) - len(differ)} of {len(rows)} probes the same" + (f"; different: {', '.join(differ)}" if differ else ""))
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", type=Path, metavar="DIR", help="run the probes and write their records to DIR")
    mode.add_argument("--check", type=Path, metavar="DIR", help="rerun the probes DIR's index lists and compare")
    ap.add_argument("--only", action="append", default=[], metavar="SUBSTRING",
                    help="only the probes whose name contains it (repeatable), with those they read files from")
    ap.add_argument("--wipe-graph", action="store_true",
                    help="allow the graph probes, which wipe the configured Neo4j database")
    a = ap.parse_args(argv)
    if a.record is not None:
        return record(a.record, a.only, a.wipe_graph)
    return check(a.check, a.only, a.wipe_graph)


if __name__ == "__main__":
    sys.exit(main())
