"""Wrong-way twins (ace_env/twins.py): executable near neighbours of BFCL functions, offered by the
distractor strategy at the decision step and carried by every export."""

from __future__ import annotations

import ast
import copy
import importlib.util
import inspect
import json
import random
import re
from pathlib import Path

import pytest
from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

from ace_env import bfcl, twins
from ace_env.bfcl.export import TWIN_DOC_DIR, TWIN_MODULE_FILE, TWINS_WRITTEN, refuses_a_later_tool
from ace_env.executor import OK, RolloutState
from ace_env.tasks import Task
from ace_env.tasksets import check_against_bfcl, load_task_set
from ace_env.verifier import ground_truth_rollout, verify
from synth import strategies
from synth.checks.parts import DISTRACTOR_NOT_NEW, adjacent_positions, flat_calls
from synth.repair import usable_version
from synth.strategies.distractor import distractor, distractor_problems, twin_candidates, with_distractors
from synth.taskcheck import check_task
from train.engine import offered_schemas
from train.export import export, to_openai_sft, to_trl
from train.trlenv import environment_class

#: The compositions of issue 26 whose ``to`` tool must have twins.
TARGETS = [("pressBrakePedal", "startEngine"), ("touch", "echo"), ("get_zipcode_based_on_city", "estimate_distance"),
           ("get_flight_cost", "book_flight"), ("cd", "touch"), ("book_flight", "cancel_booking"),
           ("retrieve_invoice", "contact_customer_support"),
           ("book_flight", "retrieve_invoice"), ("get_stock_info", "place_order"),
           ("place_order", "get_order_details")]
#: Targets no usable seed holds (the provenance repair separates the pair): no distractor task can be made there.
NO_USABLE_SEED = [("get_order_details", "send_message")]


@pytest.fixture(scope="module")
def seeds():
    return bfcl.load_tasks("base") + bfcl.load_tasks("long_context")


def _made(seeds, target, limit=12):
    """Distractor tasks on ``target`` from usable seeds (seed, task)."""
    out = []
    for i, seed in enumerate(t for t in seeds if adjacent_positions(t, target)):
        seed = usable_version(seed)
        if seed is None or not adjacent_positions(seed, target):
            continue
        task = strategies.generate("distractor", seed, target, 0.6, seed=7, index=i)
        if task is not None:
            out.append((seed, task))
        if len(out) >= limit:
            break
    return out


# --------------------------------------------------------------------------- the registry


def test_every_target_tool_has_twins_with_the_real_tools_signature_and_schema():
    for _, b in TARGETS:
        assert twins.twins_of(b), f"{b} has no twin"
    functions = bfcl.functions()
    for name, twin in twins.TWINS.items():
        assert name not in functions and twin.real in functions
        info = twins.all_functions()[name]
        assert info.class_name == functions[twin.real].class_name
        own = list(inspect.signature(twin.method).parameters.values())[1:]  # without self
        real = list(bfcl.signature(twin.real).parameters.values())
        assert [(p.name, p.default, p.kind) for p in own] == [(p.name, p.default, p.kind) for p in real], name
        schema, real_schema = twins.tool_schema(name)["function"], bfcl.tool_schema(twin.real)["function"]
        assert schema["name"] == name and schema["parameters"] == real_schema["parameters"]
        assert schema["description"] != real_schema["description"] and "Tool description: " in schema["description"]
        # a near neighbour: its name shares a word with the real tool's (the shell's own names aside)
        words = [set(re.sub(r"([a-z])([A-Z])", r"\1_\2", n).lower().split("_")) - {"get"} for n in (name, twin.real)]
        assert words[0] & words[1] or name in {"print_text", "stat"}, name
        doc = twins.doc(name)
        assert doc["parameters"] == functions[twin.real].doc["parameters"]
        assert twins.signature(name) == bfcl.signature(twin.real)


def _value(output):
    """A tool's output as data (BFCL renders a dict as JSON and None as 'None')."""
    return None if output in (None, "None") else json.loads(output)


def _calls_of(seeds, real, limit=6):
    """BFCL tasks calling ``real`` successfully: (task, flat index of the call, the call), at most ``limit``."""
    found = 0
    for task in seeds:
        for k, (t, _, raw, name) in enumerate(flat_calls(task)):
            if name != real:
                continue
            env = RolloutState(task)
            for t2, _, raw2, _ in flat_calls(task)[:k]:
                env.call(raw2, t2)
            out = env.call(raw, t)
            if out.status == OK and '"error"' not in (out.output or ""):
                yield task, k, raw
                found += 1
                if found >= limit:
                    return
            break


#: Twins that look up what their real tool would create (``stat`` beside ``touch``): "no such file" is their answer.
LOOK_UP_WHAT_THE_REAL_TOOL_CREATES = {"stat"}


@pytest.mark.parametrize("name", sorted(twins.TWINS))
def test_a_twin_executes_and_returns_a_result_shaped_like_the_real_tools(seeds, name):
    twin = twins.TWINS[name]
    tried = wrong_way = 0
    for seed, k, raw in _calls_of(seeds, twin.real):
        classes, tools, config, distractors = with_distractors(seed, [name])
        task = Task.from_dict({**seed.to_dict(), "id": "twin-probe", "source": "ace", "tools": tools,
                               "distractors": distractors, "involved_classes": classes})
        check_against_bfcl(task)  # a twin of an involved class is a known function
        real_env, twin_env = RolloutState(task), RolloutState(task)
        for t, _, before, _ in flat_calls(task)[:k]:
            real_env.call(before, t)
            twin_env.call(before, t)
        turn = flat_calls(task)[k][0]
        real = real_env.call(raw, turn)
        got = twin_env.call(raw.replace(twin.real + "(", name + "(", 1), turn)
        tried += 1
        assert got.status == OK and got.name == name, got
        assert got.arguments == real.arguments  # bound to the real tool's signature
        if name not in LOOK_UP_WHAT_THE_REAL_TOOL_CREATES:
            assert "error" not in (got.output or "").lower(), (name, got.output)
        real_out, twin_out = _value(real.output), _value(got.output)
        assert type(twin_out) is type(real_out) or (real_out is None and isinstance(twin_out, dict)), \
            (name, got.output)
        if isinstance(twin_out, dict):
            expected = set((twins.doc(name).get("response") or {}).get("properties") or {}) | set(real_out or {})
            expected |= {"error"} if name in LOOK_UP_WHAT_THE_REAL_TOOL_CREATES else set()
            assert set(twin_out) <= expected, (name, set(twin_out), expected)
        # the wrong way: another result, or another state, than the real tool's
        wrong_way += (got.output, twin_env.public_state()) != (real.output, real_env.public_state())
    assert tried and wrong_way, (name, tried, wrong_way)


def test_a_twins_output_is_data_not_code():
    # no eval, exec, compile or dynamic import anywhere in the module
    tree = ast.parse(Path(twins.__file__).read_text())
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert not called & {"eval", "exec", "compile", "__import__"}
    # a call whose arguments look like code gets them back as data, and nothing is run
    seed = next(t for t in bfcl.load_tasks("base") if "echo" in t.tools)
    classes, tools, config, distractors = with_distractors(seed, ["print_text"])
    task = Task.from_dict({**seed.to_dict(), "id": "twin-data", "source": "ace", "tools": tools,
                           "distractors": distractors})
    payload = "__import__('os').system('touch /tmp/ace-pwned') or {}"
    out = RolloutState(task).call(f"print_text(content={payload!r})", 0)
    assert out.status == OK and json.loads(out.output) == {"terminal_output": payload}
    assert not Path("/tmp/ace-pwned").exists()
    # an unbound call is the real tool's TypeError, as BFCL records it, never executed as text
    bad = RolloutState(task).call("print_text(contents='x')", 0)
    assert bad.status == "error" and "unexpected keyword" in bad.output


# --------------------------------------------------------------------------- the strategy


@pytest.mark.parametrize("target", TARGETS)
def test_calling_the_twin_instead_of_the_real_tool_fails_while_the_oracle_passes(seeds, target):
    made = _made(seeds, target, limit=4)
    assert made, target
    for seed, task in made:
        assert check_task(task).valid, (task.id, check_task(task).reasons)
        assert verify(task, ground_truth_rollout(task)).reward == 1.0
        k = adjacent_positions(task, target)[0]
        t, i, raw, _ = flat_calls(task)[k + 1]
        at = task.provenance["distractor_turn"]
        assert at == t and set(task.distractors) <= set(task.turns[t].tools_added)
        assert not any(d in task.offered_tools(u) for d in task.distractors for u in range(t))
        for name in task.distractors:
            assert name in twins.twins_of(target[1]) and name not in seed.tools
            rollout = ground_truth_rollout(task)
            rollout[t][i] = raw.replace(target[1] + "(", name + "(", 1)
            verdict = verify(task, rollout)
            assert verdict.steps[t][i].status == OK  # executed: the verifier, not a missing function, rejects it
            assert verdict.reward == 0.0 and verdict.failing_turn == t, (task.id, name)


def _usable(seeds, target):
    return [u for t in seeds if adjacent_positions(t, target) for u in [usable_version(t)]
            if u is not None and adjacent_positions(u, target)]


@pytest.mark.parametrize("target", NO_USABLE_SEED)
def test_targets_without_a_usable_seed_get_no_distractor_task(seeds, target):
    # if a repair ever keeps the pair together, move the target to TARGETS
    assert not _usable(seeds, target) and not _made(seeds, target, limit=1)


def test_a_distractor_already_offered_by_the_seed_is_rejected(seeds):
    seed, task = _made(seeds, ("get_stock_info", "place_order"), limit=1)[0]
    added = task.provenance["added_distractors"]
    assert not distractor_problems(task)
    # a seed that already offers the twins gets no distractor made of them
    again = distractor(task, ("get_stock_info", "place_order"), 1.0, random.Random(0))
    assert again is None or not set(again.provenance["added_distractors"]) & set(added)
    assert not set(twin_candidates(task, "place_order")) & set(added)
    # and a task that claims one anyway is rejected by the task check
    stale = Task.from_dict(copy.deepcopy(task.to_dict()))
    stale.provenance["seed_tool_names"] = list(seed.tools) + added[:1]
    assert any("already offered" in p for p in distractor_problems(stale))
    assert DISTRACTOR_NOT_NEW in check_task(stale).reasons


def test_a_task_whose_ground_truth_would_call_a_twin_is_not_made(seeds):
    seed, task = _made(seeds, ("get_stock_info", "place_order"), limit=1)[0]
    name = task.provenance["added_distractors"][0]
    k = adjacent_positions(task, ("get_stock_info", "place_order"))[0]
    t, i, raw, _ = flat_calls(task)[k + 1]
    d = copy.deepcopy(task.to_dict())
    d["turns"][t]["ground_truth"][i] = raw.replace("place_order(", name + "(", 1)
    calls_twin = Task.from_dict(d)
    assert any("called by the ground truth" in p for p in distractor_problems(calls_twin))
    assert name not in twin_candidates(calls_twin, "place_order")


# --------------------------------------------------------------------------- prompts and exports


def _one_task(seeds):
    return _made(seeds, ("get_stock_info", "place_order"), limit=1)[0][1]


def test_the_policy_sees_the_twins_from_the_decision_turn(seeds):
    task = _one_task(seeds)
    at = task.provenance["distractor_turn"]
    for turn in range(len(task.turns)):
        names = [s["function"]["name"] for s in offered_schemas(task, turn)]
        assert set(task.distractors) <= set(names) if turn >= at else not set(task.distractors) & set(names)
    names = [s["function"]["name"] for s in offered_schemas(task, at)]
    real = names.index("place_order")
    assert names[real - 1] in task.distractors  # listed beside the real tool, right before it (issue 34)
    cls = environment_class([s["function"]["name"] for s in offered_schemas(task, at)])
    assert all(hasattr(cls, n) for n in task.distractors)


def test_export_of_a_distractor_task_carries_the_twins_doc_and_implementation(seeds, tmp_path, monkeypatch):
    task = _one_task(seeds)
    report = export([task], "bfcl", tmp_path / "bfcl")
    assert report.written == 1 and report.notes == {TWINS_WRITTEN: [task.id]}
    out = tmp_path / "bfcl"
    q = json.loads((out / "BFCL_v4_multi_turn_ace_question.json").read_text())
    at = task.provenance["distractor_turn"]
    assert set(task.distractors) <= set(q["missed_function"][str(at)])
    docs = [json.loads(line) for line in (out / TWIN_DOC_DIR / "trading_bot.json").read_text().splitlines()]
    assert {d["name"] for d in docs} == set(task.distractors)
    assert all(d == twins.doc(d["name"]) for d in docs)
    # the implementation: a plain module, loaded as a file, whose install() makes the twins BFCL methods
    spec = importlib.util.spec_from_file_location("ace_twins_export", out / TWIN_MODULE_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert set(module.TWINS) == set(task.distractors)
    api = bfcl.api_class("TradingBot")
    for name in task.distractors:
        monkeypatch.setattr(api, name, None, raising=False)  # undone after the test
    module.install()
    env = RolloutState(task)
    inst = copy.deepcopy(env.instances["TradingBot"])
    for name in task.distractors:
        args = {"order_type": "Buy", "symbol": "NVDA", "price": 100.0, "amount": 1}
        mine = RolloutState(task).call(f"{name}(order_type='Buy', symbol='NVDA', price=100.0, amount=1)",
                                      len(task.turns) - 1)
        assert json.dumps(getattr(inst, name)(**args)) == mine.output
        # BFCL's own executor (which maps every public method of an involved class) runs the installed twin
        call = f"{name}(order_type='Buy',symbol='NVDA',price=100.0,amount=1)"
        results, _ = multi_turn_utils.execute_multi_turn_func_call(
            [call], q["initial_config"], q["involved_classes"], f"ace_twins_test_{name}", q["id"])
        assert results == [mine.output]
    for key in [k for k in vars(multi_turn_utils) if k.startswith("ace_twins_test_")]:
        delattr(multi_turn_utils, key)
    # read back as a task folder, the twins are offered from that turn and run
    back = next(iter(load_task_set(str(out)).values()))
    assert set(task.distractors) <= set(back.offered_tools(at))
    assert at == 0 or not set(task.distractors) & set(back.offered_tools(at - 1))
    assert verify(back, ground_truth_rollout(back)).reward == 1.0


def test_trl_and_sft_exports_carry_the_twins_schema(seeds):
    task = _one_task(seeds)
    at = task.provenance["distractor_turn"]
    row = to_trl(task)
    added = [s["function"]["name"] for s in row["turns"][at]["tools_added"]] if at else \
        [s["function"]["name"] for s in row["tools"]]
    assert set(task.distractors) <= set(added)
    assert set(task.distractors) <= set(row["turns"][at]["tools_offered"])
    assert Task.from_dict(json.loads(row["task"])).distractors == task.distractors
    sft = to_openai_sft(task)
    assert set(task.distractors) <= {s["function"]["name"] for s in sft["tools"]}  # one list, every turn's tools
    assert set(sft) == {"messages", "tools"} and not refuses_a_later_tool(task)  # the export keeps the task
