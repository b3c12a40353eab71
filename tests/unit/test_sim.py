"""The simulated agent: seeding, slip rates, planted compositions, weakness files, CLI."""

from __future__ import annotations

import json
import math

import pytest

from ace_env import bfcl
from ace_env.calls import parse_call
from ace_env.sim import (
    KINDS,
    Weakness,
    WeaknessSpec,
    load_weakness,
    simulate,
    simulate_rollout,
    slip_chance,
)
from ace_env.verifier import verify
from ace_graph.errors import ConfigError

ZIP, DIST = "get_zipcode_based_on_city", "estimate_distance"


@pytest.fixture(scope="module")
def base():
    return bfcl.load_tasks("base")


@pytest.fixture(scope="module")
def by_id(base):
    return {t.id: t for t in base}


def _names(task):
    """Ground-truth tool names per turn."""
    return [[parse_call(c).name for c in turn.ground_truth] for turn in task.turns]


def _previous(task, t, i):
    """The previous ground-truth call's name (same turn, else the last of the previous non-empty turn)."""
    names = _names(task)
    if i:
        return names[t][i - 1]
    for u in range(t - 1, -1, -1):
        if names[u]:
            return names[u][-1]
    return None


def _contains_pair(task, a, b):
    flat = [n for turn in _names(task) for n in turn]
    return any(x == a and y == b for x, y in zip(flat, flat[1:]))


def _jsonl(rows):
    return "".join(json.dumps(r) + "\n" for r in rows)


# --------------------------------------------------------------------------- seeding


def test_same_seed_same_bytes_different_seed_different(base):
    spec = WeaknessSpec(default=Weakness(0.1))
    a = _jsonl(simulate(base, 200, spec, seed=7))
    b = _jsonl(simulate(base, 200, spec, seed=7))
    c = _jsonl(simulate(base, 200, spec, seed=8))
    assert a == b
    assert a != c


def test_rollout_k_regenerates_alone(base):
    spec = WeaknessSpec(default=Weakness(0.2, "wrong_tool"), tools={"cd": Weakness(0.5, "skip")})
    batch = list(simulate(base, 60, spec, seed=11))
    for k in (0, 1, 17, 59):
        assert simulate_rollout(base, k, spec, 11) == batch[k]
    assert len({r["rollout_id"] for r in batch}) == 60


def test_no_weakness_reproduces_ground_truth(base, by_id):
    for r in simulate(base, 50, WeaknessSpec(default=Weakness(0.0)), seed=1):
        task = by_id[r["task_id"]]
        assert r["turns"] == [t.ground_truth for t in task.turns]
        assert r["meta"]["slips"] == []
        assert verify(task, r["turns"]).reward == 1.0


# --------------------------------------------------------------------------- rates


def _within(observed, trials, p, sigmas=4.5):
    sd = math.sqrt(p * (1 - p) / trials)
    return abs(observed / trials - p) <= sigmas * sd


def test_tool_slip_rate_matches_spec(base, by_id):
    spec = WeaknessSpec(default=Weakness(0.0), tools={"cd": Weakness(0.3, "malformed")})
    trials = slips = 0
    for r in simulate(base, 3000, spec, seed=5):
        task = by_id[r["task_id"]]
        trials += sum(n == "cd" for turn in _names(task) for n in turn)
        for s in r["meta"]["slips"]:
            assert (s["tool"], s["kind"], s["cause"]) == ("cd", "malformed", "tool")
            assert task.turns[s["turn"]].ground_truth[s["index"]].startswith("cd(")
            slips += 1
    assert trials > 500
    assert _within(slips, trials, 0.3), slips / trials


def test_default_rate_and_acted_without_need_rate():
    tasks = bfcl.load_tasks("miss_func")
    by_id = {t.id: t for t in tasks}
    spec = WeaknessSpec(default=Weakness(0.1, "skip"))
    calls = call_slips = empty = acted = 0
    for r in simulate(tasks, 1500, spec, seed=2):
        task = by_id[r["task_id"]]
        calls += task.n_steps
        empty += sum(not t.ground_truth for t in task.turns)
        for s in r["meta"]["slips"]:
            assert s["cause"] == "default"
            if s["kind"] == "acted_without_need":
                acted += 1
                assert not task.turns[s["turn"]].ground_truth
                assert len(r["turns"][s["turn"]]) == 1
            else:
                call_slips += 1
    assert _within(call_slips, calls, 0.1), call_slips / calls
    assert empty > 300 and _within(acted, empty, 0.1), acted / empty


def test_slip_chance_takes_the_max_and_the_most_specific_cause():
    spec = WeaknessSpec(
        default=Weakness(0.05),
        tools={DIST: Weakness(0.3, "skip")},
        compositions={(ZIP, DIST): Weakness(0.6, "wrong_tool")},
    )
    assert slip_chance(spec, DIST, ZIP)[0::2] == (0.6, "composition")
    assert slip_chance(spec, DIST, ZIP)[1].kind == "wrong_tool"
    assert slip_chance(spec, DIST, "cd")[0::2] == (0.3, "tool")
    assert slip_chance(spec, "cd", ZIP)[0::2] == (0.05, "default")
    low = WeaknessSpec(default=Weakness(0.5), compositions={(ZIP, DIST): Weakness(0.2)})
    assert slip_chance(low, DIST, ZIP)[0::2] == (0.5, "default")


def test_composition_slips_only_after_from(base, by_id):
    a, b = "get_flight_cost", "book_flight"
    tasks = [t for t in base if any(b in turn for turn in _names(t))]
    spec = WeaknessSpec(default=Weakness(0.0), compositions={(a, b): Weakness(0.5)})
    after = not_after = slips = 0
    for r in simulate(tasks, 1500, spec, seed=9):
        task = by_id[r["task_id"]]
        names = _names(task)
        for t, turn in enumerate(names):
            for i, n in enumerate(turn):
                if n == b:
                    if _previous(task, t, i) == a:
                        after += 1
                    else:
                        not_after += 1
        for s in r["meta"]["slips"]:
            assert (s["tool"], s["cause"]) == (b, "composition")
            assert _previous(task, s["turn"], s["index"]) == a
            slips += 1
    assert not_after > 300  # the tool is called after other tools too, and never slips there
    assert _within(slips, after, 0.5), slips / after


# --------------------------------------------------------------------------- verifier agreement


@pytest.mark.parametrize("kind", KINDS)
def test_verifier_fails_at_the_planted_composition(base, by_id, kind):
    tasks = [t for t in base if _contains_pair(t, ZIP, DIST)]
    assert tasks
    spec = WeaknessSpec(default=Weakness(0.0), compositions={(ZIP, DIST): Weakness(1.0, kind)})
    for r in simulate(tasks, 60, spec, seed=3):
        task = by_id[r["task_id"]]
        slips = r["meta"]["slips"]
        assert slips, r
        first = slips[0]
        assert first["tool"] == DIST and first["cause"] == "composition"
        assert task.turns[first["turn"]].ground_truth[first["index"]].startswith(DIST)
        v = verify(task, r["turns"])
        assert v.reward == 0.0
        assert (v.failing_turn, v.failing_oracle_step) == (first["turn"], first["index"])


def test_slipped_rollouts_fail_and_clean_ones_pass(base, by_id):
    spec = WeaknessSpec(default=Weakness(0.05, "argument"), tools={"cd": Weakness(0.2, "wrong_tool")})
    for r in simulate(base, 400, spec, seed=4):
        task = by_id[r["task_id"]]
        v = verify(task, r["turns"])
        slips = r["meta"]["slips"]
        if not slips:
            assert v.reward == 1.0
        else:
            assert v.reward == 0.0
            assert (v.failing_turn, v.failing_oracle_step) == (slips[0]["turn"], slips[0]["index"])
            if slips[0]["kind"] == "argument":
                assert v.attribution == "wrong_argument"


def test_early_stop_empties_the_rest(base, by_id):
    spec = WeaknessSpec(default=Weakness(0.0), tools={"cd": Weakness(1.0, "early_stop")})
    tasks = [t for t in base if any("cd" in turn for turn in _names(t))]
    for r in simulate(tasks, 40, spec, seed=6):
        task = by_id[r["task_id"]]
        (slip,) = r["meta"]["slips"]
        t, i = slip["turn"], slip["index"]
        assert slip["kind"] == "early_stop"
        assert len(r["turns"]) == len(task.turns)
        assert r["turns"][t] == task.turns[t].ground_truth[:i]
        assert all(turn == [] for turn in r["turns"][t + 1 :])
        assert all(r["turns"][u] == task.turns[u].ground_truth for u in range(t))
        assert verify(task, r["turns"]).reward == 0.0


# --------------------------------------------------------------------------- weakness files


def test_load_weakness_reads_the_documented_format(tmp_path):
    f = tmp_path / "w.toml"
    f.write_text(
        "[defaults]\nerror = 0.02\n"
        '[[tool]]\nname = "grep"\nerror = 0.35\nkind = "argument"\n'
        '[[composition]]\nfrom = "get_zipcode_based_on_city"\nto = "estimate_distance"\nerror = 0.6\nkind = "skip"\n'
        '[[composition]]\nfrom = "cd"\nto = "ls"\nerror = 1\n'
    )
    spec = load_weakness(f)
    assert spec.default == Weakness(0.02, "argument")
    assert spec.tools == {"grep": Weakness(0.35, "argument")}
    assert spec.compositions[(ZIP, DIST)] == Weakness(0.6, "skip")
    assert spec.compositions[("cd", "ls")] == Weakness(1.0, "argument")
    assert load_weakness(None).default == Weakness(0.02, "argument")


@pytest.mark.parametrize(
    "text, needles",
    [
        ('[[tool]]\nname = "grpe"\nerror = 0.3\n', ["[[tool]] #1", "grpe"]),
        ('[[tool]]\nname = "grep"\nerror = 1.5\n', ["[[tool]] #1", "grep", "outside [0, 1]"]),
        ('[[tool]]\nname = "grep"\nerror = -0.1\n', ["[[tool]] #1", "outside"]),
        ('[[tool]]\nname = "grep"\nerror = "high"\n', ["[[tool]] #1", "error"]),
        ('[[tool]]\nname = "grep"\nerror = 0.3\nkind = "typo"\n', ["[[tool]] #1", "unknown kind 'typo'"]),
        ('[[tool]]\nname = "grep"\nerror = 0.3\nrate = 1\n', ["[[tool]] #1", "unknown key", "rate"]),
        ('[[tool]]\nname = "grep"\n', ["[[tool]] #1", "missing", "error"]),
        (
            '[[tool]]\nname = "ls"\nerror = 0.1\n[[tool]]\nname = "grep"\nerror = 0.1\n[[tool]]\nname = "grep"\nerror = 0.2\n',
            ["[[tool]] #3", "twice"],
        ),
        ('[[composition]]\nfrom = "cd"\nto = "lss"\nerror = 0.3\n', ["[[composition]] #1", "lss"]),
        ('[[composition]]\nfrom = "cd"\nto = "ls"\nerror = 0.3\nkind = "x"\n', ["[[composition]] #1", "'cd' -> 'ls'", "kind"]),
        ("[defaults]\nerror = 2\n", ["[defaults]", "outside"]),
        ("[defaults]\nerorr = 0.1\n", ["[defaults]", "erorr"]),
        ("[tools]\nx = 1\n", ["unknown key", "tools"]),
        ("[defaults\nerror = 0.1\n", ["not valid TOML"]),
    ],
)
def test_bad_weakness_file_names_file_and_entry(tmp_path, text, needles):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_weakness(f)
    msg = str(e.value)
    assert str(f) in msg
    for needle in needles:
        assert needle in msg, msg


def test_missing_weakness_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_weakness(tmp_path / "nope.toml")


# --------------------------------------------------------------------------- CLI


def test_cli_round_trip(tmp_path, capsys):
    from ace.cli import main
    from ace_env.formats import read_any

    w = tmp_path / "w.toml"
    w.write_text('[defaults]\nerror = 0.05\n[[composition]]\nfrom = "cd"\nto = "ls"\nerror = 0.8\n')
    out1, out2 = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    argv = ["sim", "rollouts", "--tasks", "bfcl:base", "--n", "120", "--weakness", str(w), "--seed", "4"]
    assert main([*argv, "--out", str(out1)]) == 0
    summary = capsys.readouterr().out
    assert "120 rollouts" in summary and str(out1) in summary
    assert main([*argv, "--out", str(out2)]) == 0
    assert out1.read_bytes() == out2.read_bytes()
    rollouts = list(read_any(out1))
    assert len(rollouts) == 120
    assert all(isinstance(r.meta["slips"], list) for r in rollouts)
    batch = list(simulate(bfcl.load_tasks("base"), 120, load_weakness(w), 4))
    assert [json.loads(x) for x in out1.read_text().splitlines()] == batch
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl", "w.toml"]

    # no weakness file: defaults only
    assert main(["sim", "rollouts", "--tasks", "bfcl:base", "--n", "5", "--out", str(out2), "--force"]) == 0
    assert len(out2.read_text().splitlines()) == 5


def test_cli_errors_leave_nothing_behind(tmp_path, capsys):
    from ace.cli import main

    bad = tmp_path / "bad.toml"
    bad.write_text('[[tool]]\nname = "nope"\nerror = 0.1\n')
    out = tmp_path / "r.jsonl"
    assert main(["sim", "rollouts", "--tasks", "bfcl:base", "--n", "3", "--weakness", str(bad), "--out", str(out)]) == 1
    assert "nope" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [bad]


def test_cli_help_explains(capsys):
    from ace.cli import main

    assert main(["sim", "--help"]) == 0
    out = capsys.readouterr().out
    assert "rollouts" in out and "[[composition]]" in out and "weakness" in out
    assert main(["sim", "rollouts", "--help"]) == 0
    assert "--weakness" in capsys.readouterr().out
