"""The pure parts of benchmarks/behaviour_check.py: normalization, the probe record, the index, the comparison
and the probe selection (the probe run itself is a benchmark, not a test)."""

from __future__ import annotations

import json

import pytest

from tests.benchmod import load_benchmark

bc = load_benchmark("behaviour_check.py", "behaviour_check")


def test_normalize_replaces_paths_longest_first():
    text = "wrote /tmp/ace-behaviour-x/home/runs and /tmp/ace-behaviour-x2 at bolt://127.0.0.1:28187 in /work/main"
    out = bc.normalize(text, {"/tmp/ace-behaviour-x": "{tmp}", "/tmp/ace-behaviour-x2": "{tmp2}",
                              "bolt://127.0.0.1:28187": "{neo4j}", "/work/main": "{repo}"})
    assert out == "wrote {tmp}/home/runs and {tmp2} at {neo4j} in {repo}"


def test_normalize_json_durations_and_rates_only():
    text = ('{"seconds": 12.5, "ingest_seconds": 3, "tasks_per_s": 246.8, "wall_s": 1e-3, '
            '"tasks": 200, "pass_rate": 0.25, "seed": 11, "s": 4}')
    out = json.loads(bc.normalize(text).replace("<num>", '"<num>"'))
    assert out == {"seconds": "<num>", "ingest_seconds": "<num>", "tasks_per_s": "<num>", "wall_s": "<num>",
                   "tasks": 200, "pass_rate": 0.25, "seed": 11, "s": 4}


def test_normalize_numbers_of_an_object_of_seconds_only():
    text = ('{"phase_seconds": {"seed": 21.094, "verify_tag_write": 6.5}, "ingest": {"steps": 3235, "created": 600}, '
            '"seconds_saved": {"a": 1}}')
    assert bc.normalize(text) == ('{"phase_seconds": {"seed": <num>, "verify_tag_write": <num>}, '
                                  '"ingest": {"steps": 3235, "created": 600}, "seconds_saved": {"a": 1}}')


def test_normalize_text_durations_but_not_other_numbers():
    text = "400 stored now, 2114 steps, 147.271 s; 8 tasks from 17 attempts in 32.3 s; 3 steps; v1.2 s3"
    assert bc.normalize(text) == "400 stored now, 2114 steps, <num> s; 8 tasks from 17 attempts in <num> s; 3 steps; v1.2 s3"


def test_normalize_datetimes():
    assert bc.normalize("at 2026-12-06T22:14:13.123+00:00 and 2026-12-06 22:14:13Z, day 2026-12-06") == \
        "at <datetime> and <datetime>, day 2026-12-06"


def test_normalize_replay_rate_cell_and_table_padding():
    narrow = ("┏━━━━━━┳━━━━━━━━━┓\n"
              "│ base         │   200 │    200 │      0 │      0 │   237.4 │\n"
              "│ other        │   200 │    200 │      0 │      0 │   237.4 │")
    wide = ("┏━━━━━━━━━━━┳━━━━━━━━━━━━┓\n"
            "│ base         │   200 │    200 │      0 │      0 │   1237.45 │\n"
            "│ other        │   200 │    200 │      0 │      0 │   237.4 │")
    a, b = bc.normalize(narrow), bc.normalize(wide)
    assert a == b
    assert a.splitlines()[0] == "┏━┳━┓"
    assert a.splitlines()[1] == "│ base │ 200 │ 200 │ 0 │ 0 │ <num> │"
    assert a.splitlines()[2].endswith("│ 237.4 │")  # not a BFCL category's row: its numbers stay
    # lines without box drawing keep their spacing
    assert bc.normalize("a    b") == "a    b"


def test_render_records_command_exit_streams_and_files():
    probe = bc.Probe("p", ("verify", "--json", "{tmp}/x.jsonl"), files=("x.jsonl",))
    big = ("y" * 100 + "\n") * 1000
    text = bc.render(probe, 1, "out 1.5 s\n", "err\n", [("x.jsonl", b"small"), ("big.txt", big.encode())], {})
    lines = text.splitlines()
    assert lines[:4] == ["# probe p", "# command: ace verify --json {tmp}/x.jsonl", "# exit 1", "## stdout"]
    assert "out <num> s" in lines and "err" in lines
    assert f"## file x.jsonl (5 bytes, sha256 of the normalized text {bc.sha256('small')})" in lines
    assert any(line.startswith("## file big.txt (101000 bytes") and line.endswith(f"first {bc.EXCERPT_BYTES} bytes shown)")
               for line in lines)
    assert len(text.encode()) < bc.EXCERPT_BYTES + 1000
    # a difference past the excerpt still changes the record through the sha256
    other = bc.render(probe, 1, "out 1.5 s\n", "err\n", [("x.jsonl", b"small"), ("big.txt", (big + "z").encode())], {})
    assert other != text


def test_written_lists_folder_files_sorted(tmp_path):
    (tmp_path / "out" / "b").mkdir(parents=True)
    (tmp_path / "out" / "b" / "2.json").write_bytes(b"2")
    (tmp_path / "out" / "1.json").write_bytes(b"1")
    (tmp_path / "f.jsonl").write_bytes(b"f")
    assert bc.written(tmp_path, ("f.jsonl", "out", "gone.jsonl")) == [
        ("f.jsonl", b"f"), ("out/1.json", b"1"), ("out/b/2.json", b"2"), ("gone.jsonl", b"<missing>")]


def test_index_compare_and_load_records(tmp_path):
    records = {"a": "one\n", "b": "two\n"}
    index = bc.index_of(records, {"a": "ace a", "b": "ace b"})
    assert index == {"probes": [{"name": "a", "file": "a.txt", "command": "ace a", "sha256": bc.sha256("one\n")},
                                {"name": "b", "file": "b.txt", "command": "ace b", "sha256": bc.sha256("two\n")}]}
    for name, text in records.items():
        (tmp_path / f"{name}.txt").write_text(text)
    (tmp_path / "index.json").write_text(json.dumps(index))
    assert bc.load_records(tmp_path) == records
    rows = bc.compare(records, {"a": "one\n", "b": "TWO\n"})
    assert rows == [("a", bc.sha256("one\n"), bc.sha256("one\n"), True),
                    ("b", bc.sha256("two\n"), bc.sha256("TWO\n"), False)]
    assert bc.compare({"c": "x"}, {}) == [("c", bc.sha256("x"), "missing", False)]
    (tmp_path / "b.txt").write_text("edited\n")
    with pytest.raises(SystemExit, match="b.txt does not match its sha256"):
        bc.load_records(tmp_path)


def test_diff_excerpt_shows_first_differing_lines_and_is_cut():
    old = "\n".join(f"line {i}" for i in range(100))
    new = old.replace("line 10\n", "line ten\n").replace("line 90", "line ninety")
    out = bc.diff_excerpt(old, new, "p", lines=8)
    assert out[:2] == ["--- recorded/p", "+++ current/p"]
    assert "-line 10" in out and "+line ten" in out
    assert "+line ninety" not in out and out[-1] == "… (diff cut)"
    assert bc.diff_excerpt("same", "same", "p") == []


def test_diff_excerpt_cuts_a_long_line_around_its_first_difference():
    old = '{"a": ' + '"x", ' * 500 + '"reward": 1.0, "b": ' + '"y", ' * 500 + "}"
    new = old.replace('"reward": 1.0', '"reward": 0.0')
    minus, plus = [line for line in bc.diff_excerpt(old, new, "p", width=120) if line[:1] in "-+"][2:]
    assert minus.startswith("-… ") and '"reward": 1.0' in minus and minus.endswith(" …")
    assert plus.startswith("+… ") and '"reward": 0.0' in plus
    assert len(minus) < 130 and len(plus) < 130


def test_select_adds_the_probes_whose_files_it_reads():
    probes = bc.probes()
    names = [p.name for p in bc.select(probes, ["synth-tau2"])]
    assert names == ["sim-tau2", "ingest-tau2-sim", "synth-tau2-seed3", "synth-tau2-seed4"]
    assert [p.name for p in bc.select(probes, [])] == [p.name for p in probes]
    # every probe runs after the probes it reads from, and names are unique
    seen: set[str] = set()
    for p in probes:
        assert set(p.after) <= seen, p.name
        seen.add(p.name)
    assert len(seen) == len(probes)
