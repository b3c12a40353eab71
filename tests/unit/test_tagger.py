"""The deterministic skill tagger over BFCL's 800 scored tasks."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ace_env import bfcl
from ace_env.oracle import oracle_for
from ace_env.tasks import Task
from ace_env.verifier import ground_truth_rollout, verify
from ace_graph import tagger
from ace_graph.compositions import prior_edges
from ace_graph.tagger import (
    DATA_FLOW,
    PRECONDITION,
    OracleStepTag,
    tag_rollout_steps,
    tag_task,
)
from ace_graph.taxonomy import load_taxonomy, tool_skills

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return {t.id: t for t in bfcl.load_tasks("all")}


@pytest.fixture(scope="module")
def all_tags(tasks) -> dict[str, tuple[OracleStepTag, ...]]:
    start = time.perf_counter()
    tags = {tid: tag_task(t) for tid, t in tasks.items()}
    assert time.perf_counter() - start < 300, "tagging all 800 tasks took minutes: something is quadratic"
    return tags


@pytest.fixture(scope="module")
def edges(tasks, all_tags):
    return prior_edges(tasks.values())


def _by_tool(tags, tool):
    return [g for g in tags if g.tool == tool]


def test_every_oracle_step_is_tagged_with_known_skills(tasks, all_tags):
    known = set(load_taxonomy())
    assert len(all_tags) == 800
    for tid, tags in all_tags.items():
        task = tasks[tid]
        oracle = oracle_for(task)
        calls = [g for g in tags if g.tool is not None]
        assert len(calls) == oracle.n_steps, tid
        for flat, g in enumerate(tags):
            assert g.flat == flat
            assert g.skills, (tid, g)
            assert set(g.skills) <= known, (tid, g)
            assert list(g.skills) == sorted(set(g.skills)), (tid, g)
            assert len(g.depends_on) == len(g.dependency_kinds)
            assert list(g.depends_on) == sorted(set(g.depends_on))
            assert all(0 <= d < flat and tags[d].tool is not None for d in g.depends_on), (tid, g)
            assert set(g.dependency_kinds) <= {DATA_FLOW, PRECONDITION}
            assert set(g.arg_sources.values()) <= {"user", "output", "literal", "default"}
            if g.tool is not None:
                step = oracle.turns[g.turn].steps[g.index]
                assert step.name == g.tool
                assert set(tool_skills()[g.tool]) <= set(g.skills)
                assert set(g.arg_sources) == set(step.arguments)
            if PRECONDITION in g.dependency_kinds:
                assert "state_precondition" in g.skills
            if "param_from_output" in g.skills:
                assert "output" in g.arg_sources.values()
                assert DATA_FLOW in g.dependency_kinds
            for d, kind in zip(g.depends_on, g.dependency_kinds):
                if kind == DATA_FLOW:
                    assert "result_extraction" in tags[d].skills


def test_abstain_steps_exactly_for_empty_turns(tasks, all_tags):
    n_abstain = 0
    for tid, tags in all_tags.items():
        task = tasks[tid]
        for t, turn in enumerate(task.turns):
            in_turn = [g for g in tags if g.turn == t]
            if turn.ground_truth:
                assert [g.index for g in in_turn] == list(range(len(turn.ground_truth)))
                assert all(g.tool is not None and "abstain" not in g.skills for g in in_turn)
            else:
                n_abstain += 1
                assert len(in_turn) == 1
                (g,) = in_turn
                assert (g.tool, g.index, g.skills, g.arg_sources, g.depends_on) == (None, 0, ("abstain",), {}, ())
    assert n_abstain == sum(1 for t in tasks.values() for turn in t.turns if not turn.ground_truth) > 0


def test_zipcode_to_distance_is_data_flow(tasks, all_tags):
    tags = all_tags["multi_turn_base_56"]
    zips = _by_tool(tags, "get_zipcode_based_on_city")
    (dist,) = _by_tool(tags, "estimate_distance")
    assert len(zips) == 2
    assert dist.arg_sources == {"cityA": "output", "cityB": "output"}
    assert "param_from_output" in dist.skills and "param_from_user" not in dist.skills
    assert dict(zip(dist.depends_on, dist.dependency_kinds)) == {z.flat: DATA_FLOW for z in zips}
    for z in zips:
        assert z.arg_sources == {"city": "user"}
        assert {"param_from_user", "result_extraction", "query_lookup"} <= set(z.skills)


def test_order_id_flows_from_place_order(all_tags):
    tags = all_tags["multi_turn_base_102"]
    (order,) = _by_tool(tags, "place_order")
    (details,) = _by_tool(tags, "get_order_details")
    (cancel,) = _by_tool(tags, "cancel_order")
    assert details.arg_sources == {"order_id": "output"}
    assert dict(zip(details.depends_on, details.dependency_kinds)) == {order.flat: DATA_FLOW}
    assert dict(zip(cancel.depends_on, cancel.dependency_kinds))[order.flat] == DATA_FLOW
    assert "result_extraction" in order.skills
    (account,) = _by_tool(tags, "get_account_info")
    assert account.arg_sources == {}


def test_preconditions_are_found(all_tags):
    tags = all_tags["multi_turn_base_0"]
    cd, mkdir, mv = tags[0], tags[1], tags[2]
    assert (cd.tool, mkdir.tool, mv.tool) == ("cd", "mkdir", "mv")
    # mv(final_report.pdf -> temp) works only inside 'document' and once 'temp' exists
    assert dict(zip(mv.depends_on, mv.dependency_kinds)) == {0: PRECONDITION, 1: PRECONDITION}
    assert "state_precondition" in mv.skills and "param_from_output" not in mv.skills
    assert cd.depends_on == () and "state_precondition" not in cd.skills

    tags = all_tags["multi_turn_miss_param_21"]
    (auth,) = _by_tool(tags, "authenticate_twitter")
    (post,) = _by_tool(tags, "post_tweet")
    assert dict(zip(post.depends_on, post.dependency_kinds))[auth.flat] == PRECONDITION

    tags = all_tags["multi_turn_base_56"]
    (brake,) = _by_tool(tags, "pressBrakePedal")
    (start,) = _by_tool(tags, "startEngine")
    (fuel,) = _by_tool(tags, "fillFuelTank")
    assert dict(zip(start.depends_on, start.dependency_kinds))[brake.flat] == PRECONDITION
    # the engine needs fuel too, but displaying the status first is not a precondition
    (status,) = _by_tool(tags, "displayCarStatus")
    assert fuel.flat in start.depends_on and status.flat not in start.depends_on


def test_random_draws_do_not_create_dependencies(edges):
    # get_current_speed / temperature readings draw from the seeded generator;
    # removing one must not make later random readings or ids look dependent.
    random_readers = {"get_current_speed", "get_outside_temperature_from_google", "get_outside_temperature_from_weather_com"}
    assert not [e for e in edges if e.from_tool in random_readers or e.to_tool in random_readers]


def test_prior_edges_contain_the_known_pairs(tasks, edges):
    found = {(e.from_tool, e.to_tool, e.kind): e for e in edges}
    for pair in [
        ("get_zipcode_based_on_city", "estimate_distance", DATA_FLOW),
        ("place_order", "get_order_details", DATA_FLOW),
        ("get_stock_info", "place_order", DATA_FLOW),
        ("book_flight", "retrieve_invoice", DATA_FLOW),
        ("authenticate_twitter", "post_tweet", PRECONDITION),
        ("cd", "mv", PRECONDITION),
        ("pressBrakePedal", "startEngine", PRECONDITION),
    ]:
        assert pair in found, pair
        assert found[pair].count >= 4
        assert found[pair].example_task in tasks
    counts = [e.count for e in edges]
    assert counts == sorted(counts, reverse=True)
    assert len(found) == len(edges)
    # an edge is counted once per task
    assert max(counts) <= len(tasks)


def test_prior_edges_count_tasks(tasks):
    one = [tasks["multi_turn_base_56"]]
    edges = {(e.from_tool, e.to_tool, e.kind): e for e in prior_edges(one)}
    assert edges[("get_zipcode_based_on_city", "estimate_distance", DATA_FLOW)].count == 1
    assert edges[("get_zipcode_based_on_city", "estimate_distance", DATA_FLOW)].example_task == "multi_turn_base_56"
    assert edges[("pressBrakePedal", "startEngine", PRECONDITION)].count == 1
    assert prior_edges(one * 2)[0].count == 2


def test_rollout_tags_follow_the_rollout(tasks, all_tags):
    task = tasks["multi_turn_base_56"]
    verdict = verify(task, ground_truth_rollout(task))
    tags = tag_rollout_steps(task, verdict)
    assert [len(t) for t in tags] == [len(t) for t in verdict.steps]
    oracle = [g.skills for g in all_tags[task.id]]
    # the ground truth replayed: base and provenance skills as the oracle's (no counterfactual precondition)
    flat = [s for turn in tags for s in turn]
    assert [tuple(s for s in o if s != "state_precondition") for o in oracle] == flat

    # the agent guesses zip codes itself: no data flow, no extraction
    guessed = [
        ["estimate_distance(cityA='94016', cityB='83214')"],
        ["displayCarStatus('fuel')", "not_a_tool()", "fillFuelTank(fuelAmount=40)", "this is not a call"],
    ]
    verdict = verify(task, guessed)
    tags = tag_rollout_steps(task, verdict)
    assert [len(t) for t in tags] == [len(t) for t in verdict.steps]
    assert tags[0][0] == ("estimation",)
    assert tags[1][1] == () and tags[1][3] == ()
    assert "result_checking" in tags[1][0]

    # an output the agent read and passed on is param_from_output, and its producer extracts
    chain = [["get_zipcode_based_on_city('Rivermist')", "estimate_distance(cityA='83214', cityB='94016')"]]
    tags = tag_rollout_steps(task, verify(task, chain))
    assert "result_extraction" in tags[0][0]
    assert "param_from_output" in tags[0][1]


def _digest(tags_by_task) -> str:
    blob = json.dumps([[tid, [dataclasses.asdict(g) for g in tags]] for tid, tags in tags_by_task], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


_SCRIPT = """
import dataclasses, hashlib, json
from ace_env import bfcl
from ace_graph.tagger import tag_task
from ace_graph.compositions import prior_edges
ts = bfcl.load_tasks("base")
tags = [[t.id, [dataclasses.asdict(g) for g in tag_task(t)]] for t in ts]
print(hashlib.sha256(json.dumps(tags, sort_keys=True).encode()).hexdigest())
print(json.dumps([dataclasses.asdict(e) for e in prior_edges(ts)]))
"""


def test_tagging_is_deterministic(tasks, all_tags):
    base = [t for t in tasks.values() if t.category == "base"]
    expected = _digest((t.id, all_tags[t.id]) for t in base)
    # a fresh computation in this process (no cache) gives the same tags
    assert _digest((t.id, tagger._tag_task(t)) for t in base) == expected
    edges = json.dumps([dataclasses.asdict(e) for e in prior_edges(base)])
    for seed in ("0", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed, ACE_CACHE="off")  # recomputed, not read from disk
        out = subprocess.run(
            [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, cwd=REPO, check=True
        ).stdout.splitlines()
        assert out[0] == expected, f"tags differ under PYTHONHASHSEED={seed}"
        assert out[1] == edges, f"prior edges differ under PYTHONHASHSEED={seed}"


def _variant(task: Task, task_id: str, turns: list[list[str]], say: str = "Go on.") -> Task:
    d = task.to_dict()
    d["id"] = task_id
    d["turns"] = [{"user": [{"role": "user", "content": say}], "ground_truth": gt} for gt in turns]
    return Task.from_dict(d)


def test_random_draws_and_fresh_ids_are_not_dependencies(tasks):
    vehicle = _variant(
        tasks["multi_turn_base_56"],
        "synthetic_random_readings",
        [["get_outside_temperature_from_google()"], ["get_current_speed()"]],
    )
    first, second = tag_task(vehicle)
    assert oracle_for(vehicle).errors == []
    assert second.depends_on == (), "a reading that only shares the seeded generator is independent"

    trading = next(t for t in tasks.values() if "TradingBot" in t.involved_classes and t.category == "base")
    orders = _variant(
        trading,
        "synthetic_two_orders",
        [["place_order(order_type='Buy', symbol='AAPL', price=10.0, amount=1)"],
         ["place_order(order_type='Buy', symbol='AAPL', price=10.0, amount=1)"]],
        say="Buy one AAPL share at 10.0, please.",
    )
    first, second = tag_task(orders)
    assert oracle_for(orders).errors == []
    assert second.arg_sources["price"] == "user" and second.arg_sources["order_type"] == "user"
    assert second.depends_on == (), "the next order number alone is not a dependency"
