"""Adversarial synthesis strategies: every produced task is sound and aimed at its target."""

from __future__ import annotations

import json
import random
import re

import pytest

from ace_env import bfcl, twins
from ace_env.oracle import replay_oracle
from ace_env.tasks import Task
from ace_env.values import leaves
from ace_env.verifier import ground_truth_rollout, verify
from synth import strategies
from synth.checks.parts import adjacent_positions, flat_calls, target_present, user_text_upto
from synth.checks.seeds import usable_seed
from synth.checks.values import value_in_text
from synth.registry import targeted
from synth.repair import usable_version
from synth.strategies.build import deferred_execution, executes, memoized, seed_memo
from synth.strategies.cascade import cascade_problems
from synth.strategies.depth import LINKS_BY_ANCHOR, MAX_ADDED, MIN_ADDED
from synth.strategies.lookalike import near_identical
from synth.strategies.text import phrase
from synth.taskcheck import check_task

TARGETS = [
    ("get_zipcode_based_on_city", "estimate_distance"),
    ("place_order", "get_order_details"),
    ("get_stock_info", "place_order"),
    ("book_flight", "retrieve_invoice"),
    ("cd", "mv"),
    ("authenticate_twitter", "post_tweet"),
    ("touch", "echo"),
    ("get_flight_cost", "book_flight"),
    ("message_login", "send_message"),
    ("get_stock_info", "add_to_watchlist"),
]
PER_TARGET = 6


@pytest.fixture(scope="module")
def seeds():
    # seeds as synthesis uses them (repaired where a lookup or a text repair makes them usable); miss_func and
    # miss_param seeds put a request off to a later turn and are never used
    base = [u for t in bfcl.load_tasks("base") + bfcl.load_tasks("long_context") for u in [usable_version(t)]
            if u is not None]
    out = {}
    for target in TARGETS:
        found = [t for t in base if adjacent_positions(t, target) and usable_seed(t)]
        assert found, f"no usable seed contains {target}"
        out[target] = found[:PER_TARGET]
    return out


def _runs(seeds, name, strength=0.7):
    for target, tasks in seeds.items():
        for i, seed in enumerate(tasks):
            yield seed, target, strategies.STRATEGIES[name](seed, target, strength, random.Random(i))


def test_registry_rejects_duplicates():
    assert {"ambiguity", "lookalike", "distractor", "cascade", "depth", "random"} <= set(strategies.STRATEGIES)
    with pytest.raises(ValueError):
        strategies.register("ambiguity", definition="x", needs="y")(lambda *a: None)


def test_every_strategy_produces_valid_tasks(seeds):
    seen: set[str] = set()
    for name in strategies.STRATEGIES:
        produced = 0
        for seed, target, task in _runs(seeds, name):
            if task is None:
                continue
            produced += 1
            assert task.id.startswith(f"ace-{name}-") and len(task.id) == len(f"ace-{name}-") + 12
            assert task.source == "ace" and task.category == name
            prov = task.provenance
            assert prov["parents"] == [seed.id] and prov["strategy"] == name
            assert prov["target_edge"] == f"{target[0]}>{target[1]}" and prov["note"]
            check = check_task(task, seen)
            if check.reasons == ["duplicate"]:
                continue  # the same edit of a seed reached through two targets
            assert check.valid, (name, task.id, check.reasons, check.notes)
            assert verify(task, ground_truth_rollout(task)).reward == 1.0
            if name not in ("random", "probe"):  # a probe may reach b without a, by design
                assert target_present(task)
            # round trip through the serialized form
            assert type(task).from_dict(task.to_dict()).to_dict() == task.to_dict()
        assert produced >= 5, f"{name} produced only {produced} tasks"


def test_seed_without_target_gives_none(seeds):
    seed = seeds[TARGETS[0]][0]
    for name, fn in strategies.STRATEGIES.items():
        assert fn(seed, ("nope", "never"), 0.5, random.Random(0)) is None, name


def _oracle_steps(task):
    return [s for t in replay_oracle(task).turns for s in t.steps]


def test_ambiguity_reformats_the_intermediate_result_and_keeps_arguments(seeds):
    made = 0
    for seed, target, task in _runs(seeds, "ambiguity"):
        if task is None:
            continue
        made += 1
        # the oracle's calls and their arguments are the seed's, untouched
        assert [t.ground_truth for t in task.turns] == [t.ground_truth for t in seed.turns]
        # (a class the seed configures but does not involve is left out of every task: build())
        assert task.initial_config == {c: v for c, v in seed.initial_config.items() if c in seed.involved_classes}
        new, old = _oracle_steps(task), _oracle_steps(seed)
        assert [s.arguments for s in new] == [s.arguments for s in old]
        if "view" not in task.provenance["ambiguity_kind"]:  # a documented conversion in the text only
            assert task.provenance["conversion"]["written"] in user_text_upto(task, len(task.turns) - 1)
            assert verify(task, ground_truth_rollout(task)).reward == 1.0
            continue
        # the `from` step's result, which feeds the `to` step, reads differently
        k = adjacent_positions(task, target)[0]
        assert new[k].output != old[k].output
        assert task.output_views and task.output_views[0]["tool"] == target[0]
        # and an agent that copies the re-formatted text verbatim does not pass: values stay exact
        assert verify(task, ground_truth_rollout(task)).reward == 1.0
    assert made >= 8


def test_ambiguity_view_survives_the_task_file(seeds):
    task = next(t for _, _, t in _runs(seeds, "ambiguity") if t is not None)
    again = type(task).from_dict(json.loads(json.dumps(task.to_dict())))
    assert again.output_views == task.output_views
    assert [s.output for s in _oracle_steps(again)] == [s.output for s in _oracle_steps(task)]


def test_lookalike_values_sit_in_the_result_read_at_the_target_edge(seeds):
    made = 0
    for seed, target, task in _runs(seeds, "lookalike"):
        if task is None:
            continue
        made += 1
        prov = task.provenance
        value, twins = prov["target_id"], prov["lookalikes"]
        # the text names the record's attribute, never the value passed on; the ground truth is the seed's
        text = user_text_upto(task, len(task.turns) - 1)
        assert str(value).lower() not in text.lower()
        # the text names the attribute, or the name a lookup of a repaired seed turned into it (Rivermist -> RMS)
        k = adjacent_positions(task, target)[0]
        if prov["lookalike_kind"] == "label":  # (attribute look-alikes: tests/unit/test_convert_lookalike.py)
            label = prov["identified_by"].split("-")[0].lower()
            looked_up = " ".join(s.output or "" for s in _oracle_steps(task)[:k]).lower()
            assert label in text.lower() or (seed.provenance.get("repaired") and label in looked_up)
        assert [t.ground_truth for t in task.turns] == [t.ground_truth for t in seed.turns]
        # a's result, as the agent reads it at the target edge, holds the value among near-identical ones
        k = adjacent_positions(task, target)[0]
        shown = json.loads(_oracle_steps(task)[k].output)
        flat = json.dumps(shown)
        assert twins and all(json.dumps(t) in flat for t in twins) and json.dumps(value) in flat
        assert all(near_identical(t, value) for t in twins)
        # b consumes the right one
        assert any(leaf == value for leaf in leaves(_oracle_steps(task)[k + 1].arguments))
    assert made >= 3


def test_cascade_oracle_checks_and_recovers(seeds):
    patterns = set()
    made = 0
    for seed, target, task in _runs(seeds, "cascade"):
        if task is None:
            continue
        made += 1
        prov = task.provenance
        patterns.add(prov["pattern"])
        gt = [c for t in task.turns for c in t.ground_truth]
        k = adjacent_positions(task, target)[0]
        recovery = prov["recovery"][0]
        # the text states the goal only: it is the seed's
        assert [t.user for t in task.turns] == [t.user for t in seed.turns]
        assert not cascade_problems(task)
        if not prov["check"]:
            # the cross-check's total gives the complete value: the partial read, then the recovery with it; the
            # shown value passed on instead fails the task (issue 34: caught only by the cross-check)
            assert gt[k + 1] == recovery and prov["cross_check"]["kind"] == "total"
            steps = _oracle_steps(task)
            shown = json.loads(steps[k].output)[prov["cross_check"]["key"]]
            rollout = ground_truth_rollout(task)
            t, i, raw, _ = flat_calls(task)[k + 1]
            rollout[t][i] = raw.replace(repr(prov["cross_check"]["value"]), repr(shown))
            assert rollout[t][i] != raw and verify(task, rollout).reward == 0.0
            continue
        check = prov["check"][0]
        # partial result, then the check (the same read again), then the recovery
        assert gt[k - 1] == check and gt[k] == check and gt[k + 1] == recovery
        steps = _oracle_steps(task)
        assert steps[k - 1].output != steps[k].output
        # skipping the check fails the task
        rollout = ground_truth_rollout(task)
        t, i, _, _ = flat_calls(task)[k]
        del rollout[t][i]
        assert verify(task, rollout).reward == 0.0
    assert made >= 5
    # one pattern is enough here: cascade now needs a seed that calls `a` for one entity only (issue 26),
    # and among these targets only quotes (stale values) qualify
    assert patterns, patterns


def test_depth_extends_the_target_chain_each_step_consuming_an_earlier_result(seeds):
    made = 0
    for seed, target, task in _runs(seeds, "depth", strength=1.0):
        if task is None:
            continue
        made += 1
        added = task.provenance["added"]
        assert MIN_ADDED <= len(added) <= MAX_ADDED
        assert not set(task.involved_classes) - set(seed.involved_classes) - {"MathAPI"}
        assert adjacent_positions(task, target) and len(task.turns) == len(seed.turns)
        steps = _oracle_steps(task)
        k = adjacent_positions(task, target)[0]
        chain = [k + 1]  # b, then each added call, in order
        for call in added:
            j = next(n for n, s in enumerate(steps) if s.call == call)
            assert j > chain[-1]
            # consumes the result of the call before it in the chain (checked on the replayed output)
            prev = json.loads(steps[chain[-1]].output)
            produced = {json.dumps(v) for v in leaves(prev)}
            assert any(json.dumps(v) in produced for v in leaves(steps[j].arguments)), (call, steps[chain[-1]].call)
            # ... and a value new there: in no earlier chain call's arguments or output (review: a support message
            # on the booking id after the invoice took the id from the booking step, not from the invoice)
            earlier = {json.dumps(v) for n in [k] + chain[:-1] for v in leaves(json.loads(steps[n].output or "null"))}
            earlier |= {json.dumps(v) for n in [k] + chain for v in leaves(steps[n].arguments)}
            assert any(json.dumps(v) in produced - earlier for v in leaves(steps[j].arguments)), call
            # never a call the task already makes on the same values
            name = call.split("(")[0]
            assert not any(s.name == name and s.arguments == steps[j].arguments for s in _oracle_steps(seed)), call
            chain.append(j)
        assert [link.split(">")[0] for link in task.provenance["links"]][0] == target[1]
        # the text asks for the added steps after the seed's request, in the oracle's order
        t = flat_calls(task)[k + 1][0]
        text, old = task.turns[t].user[-1]["content"], seed.turns[t].user[-1]["content"].strip()
        assert text.startswith(old.rstrip(".?!")) and len(text) > len(old)
        assert check_task(task).valid
    assert made >= 5


def test_depth_varies_its_extensions_and_its_wording(seeds):
    target = ("book_flight", "retrieve_invoice")
    added, texts = set(), []
    for i in range(12):
        for seed in seeds[target]:
            task = strategies.STRATEGIES["depth"](seed, target, 1.0, random.Random(i))
            if task is None:
                continue
            added.update(task.provenance["added"])
            assert not any(c.startswith("contact_customer_support(") for c in task.provenance["added"])
            texts += [m["content"] for t in task.turns for m in t.user]
    assert len(added) >= 4  # not one call repeated over every task
    for text in texts:
        assert not re.search(r"please\W+(?:\w+\W+){0,1}please\b", text, re.I), text
    # no phrasing of an intent that already says please adds another one
    for k in range(50):
        assert phrase("send 'a window seat, please.'", random.Random(k)).lower().count("please") == 1


def test_depth_links_all_consume_an_output():
    for links in LINKS_BY_ANCHOR.values():
        for link in links:
            assert any(src.startswith("o:") for _, src in link.args), link


def test_distractors_are_wrong_way_twins_of_the_decision_tool(seeds):
    made = 0
    for seed, target, task in _runs(seeds, "distractor"):
        if task is None:
            continue
        made += 1
        assert 1 <= len(task.distractors) <= 3
        assert set(task.distractors) <= set(task.tools)
        used = {n for _, _, _, n in flat_calls(task)}
        for name in task.distractors:
            assert name not in used
            # new at the decision step: never a tool the seed already offers, and a wrong-way twin of the right tool
            assert name not in seed.tools and name in twins.twins_of(target[1]), (target, name)
        # calling one where the choice is made (with the right tool's arguments) executes, and fails the task
        k = adjacent_positions(task, target)[0]
        t, i, raw, _ = flat_calls(task)[k + 1]
        rollout = ground_truth_rollout(task)
        rollout[t][i] = raw.replace(target[1] + "(", task.distractors[0] + "(", 1)
        verdict = verify(task, rollout)
        assert verdict.steps[t][i].status == "ok", verdict.steps[t][i]
        assert verdict.reward == 0.0 and verdict.attribution == "wrong_tool"
        assert verdict.failing_turn == t
    assert made >= 10


def test_random_records_what_it_did(seeds):
    for seed, target, task in _runs(seeds, "random"):
        if task is None:
            continue
        assert task.provenance["random_kind"] in ("ambiguity", "lookalike", "distractor", "cascade", "depth")
        assert ">" in task.provenance["applied_to"]


@pytest.mark.parametrize("name", ["ambiguity", "lookalike", "distractor", "cascade", "depth", "random"])
def test_deterministic(seeds, name):
    def ids(seed_value):
        out = []
        for target, tasks in seeds.items():
            for seed in tasks[:2]:
                t = strategies.STRATEGIES[name](seed, target, 0.6, random.Random(seed_value))
                out.append(t.id if t else None)
        return out

    first = ids(11)
    assert first == ids(11)
    assert any(first)


def test_registry_walk_every_oracle_scores_one(seeds):
    """Every registered strategy's tasks, made by seed + index, verify their own ground truth with 1.0."""
    for name in strategies.STRATEGIES:
        made = 0
        for index, (target, tasks) in enumerate(seeds.items()):
            for j, seed in enumerate(tasks):
                task = strategies.generate(name, seed, target, 0.6, seed=100, index=index * 10 + j)
                if task is None:
                    continue
                made += 1
                assert verify(task, ground_truth_rollout(task)).reward == 1.0, (name, task.id)
                assert verify(task, [[] for _ in task.turns]).reward == 0.0, (name, task.id)
                again = strategies.generate(name, seed, target, 0.6, seed=100, index=index * 10 + j)
                assert again is not None and again.to_dict() == task.to_dict()
                assert task.provenance["rng"] == {"seed": 100, "index": index * 10 + j}
        assert made >= 3, f"{name} made only {made} tasks"


def _json(text):
    try:
        return json.loads(text or "null")
    except ValueError:
        return text


def test_depth_takes_no_value_the_task_already_had(seeds):
    """An added step's input from the previous call's output is in no earlier output or argument of the task
    and not in the user text (review v2: the invoice total get_flight_cost had already returned, 23/34/35/38)."""
    made = 0
    for seed, target, task in _runs(seeds, "depth", strength=1.0):
        if task is None:
            continue
        made += 1
        steps = _oracle_steps(task)
        k = adjacent_positions(task, target)[0]
        prev = k + 1
        t = flat_calls(task)[k + 1][0]
        text = user_text_upto(task, t)
        for call in task.provenance["added"]:
            j = next(n for n, s in enumerate(steps) if s.call == call)
            produced = {json.dumps(v) for v in leaves(_json(steps[prev].output))}
            fed = [v for v in leaves(steps[j].arguments) if json.dumps(v) in produced]
            earlier = {json.dumps(v) for n in range(prev) for v in leaves(_json(steps[n].output))}
            earlier |= {json.dumps(v) for n in range(prev + 1) for v in leaves(steps[n].arguments)}
            assert fed and not any(json.dumps(v) in earlier for v in fed), (task.id, call)
            assert not any(value_in_text(v, text) for v in fed), (task.id, call)
            prev = j
    assert made >= 3


def test_distractors_arrive_at_the_decision_steps_turn(seeds):
    """Review v2: every distractor task offered its distractors from turn 1; they come with b's turn."""
    made = 0
    for seed, target, task in _runs(seeds, "distractor"):
        if task is None:
            continue
        made += 1
        k = adjacent_positions(task, target)[0]
        at = flat_calls(task)[k + 1][0]
        assert set(task.distractors) <= set(task.turns[at].tools_added), (task.id, at)
        for d in task.distractors:
            assert d in task.offered_tools(at) and d in task.offered_tools(len(task.turns) - 1)
            assert not any(d in task.offered_tools(t) for t in range(at))
        assert check_task(task).valid
        assert verify(task, ground_truth_rollout(task)).reward == 1.0
        assert Task.from_dict(task.to_dict()).offered_tools(at) == task.offered_tools(at)
    assert made >= 3


def test_deferred_execution_and_the_seed_memo_change_no_task(seeds):
    """What the pipeline's copy prediction relies on: a ``build_last`` strategy gives the same task (or None)
    when build's execution is deferred and done after, and when its seed analysis comes from the run's memo
    (each draw made twice inside it, the second from the memo); the random baseline, which tries another edit
    when build gives None, is not ``build_last``."""
    assert {n for n, s in strategies.STRATEGIES.items() if s.build_last} == set(targeted())
    assert not strategies.STRATEGIES["random"].build_last
    made = 0
    for name in targeted():
        spec = strategies.STRATEGIES[name]
        plain = [(seed, target, i, spec(seed, target, 0.6, random.Random(i)))
                 for target, tasks in seeds.items() for seed in tasks[:3] for i in range(2)]
        with seed_memo():
            for again in range(2):
                for seed, target, i, task in plain:
                    with deferred_execution():
                        late = spec(seed, target, 0.6, random.Random(i))
                    late = late if late is not None and executes(late) else None
                    assert (task is None) == (late is None), (name, seed.id, target, i, again)
                    if task is not None:
                        assert late.to_dict() == task.to_dict()
                        made += again == 0
    assert made >= 20


def test_a_memo_outside_its_block_keeps_nothing(seeds):
    calls = []
    seed = next(iter(seeds.values()))[0]
    compute = lambda: calls.append(1) or len(calls)  # noqa: E731
    assert memoized("x", seed, (0,), compute) == 1 and memoized("x", seed, (0,), compute) == 2
    with seed_memo():
        assert memoized("x", seed, (0,), compute) == 3 and memoized("x", seed, (0,), compute) == 3
        assert memoized("x", seed, (1,), compute) == 4
        other = Task.from_dict(seed.to_dict())  # another object with the same content: its own entry
        assert memoized("x", other, (0,), compute) == 5
    with seed_memo():
        assert memoized("x", seed, (0,), compute) == 6  # a new block starts empty


def test_cascade_number_search_answers_as_the_plain_scan():
    """The cascade's fast search for a number (C-level ``in`` on lists, element scan on a hit) agrees with
    comparing every leaf as a float, on nested data with bools, ints, huge ints, strings and sets."""
    from ace_env.values import number
    from synth.strategies.cascade import _holds

    def plain(x, value):
        n = number(value)
        return any(leaf == value if n is None else number(leaf) == n for leaf in leaves(x))

    rng = random.Random(7)
    atoms = [0, 1, 2, 1.0, 2.5, True, False, None, "2.5", "x", 2**60, float(2**60), 310.23, -1, 1e-9]

    def data(depth):
        kind = rng.random()
        if depth > 3 or kind < 0.4:
            return rng.choice(atoms)
        if kind < 0.6:
            return {f"k{i}": data(depth + 1) for i in range(rng.randrange(4))}
        if kind < 0.75:
            return tuple(data(depth + 1) for _ in range(rng.randrange(4)))
        if kind < 0.8:
            return frozenset(rng.choice([1, 2.5, "x", 310.23]) for _ in range(rng.randrange(3)))
        return [data(depth + 1) for _ in range(rng.randrange(30))]

    for _ in range(400):
        x = data(0)
        for value in (1, 1.0, 2.5, 310.23, True, 2**60, float(2**60), "x", 0, -1.0):
            assert _holds(x, value) == plain(x, value), (x, value)
    assert _holds({"MA": [1.5] * 2000 + [310.23]}, 310.23) and not _holds({"MA": [True] * 3}, 2.0)
    assert not _holds([[True]], 1.0) and _holds([[1]], 1.0) and _holds([(2,)], 2.0)  # a bool is no number
