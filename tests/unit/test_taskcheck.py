"""check_task: each reason code is produced by a hand-made broken task."""

from __future__ import annotations

import copy
import random

import pytest

from ace_env import bfcl, twins
from ace_env.calls import parse_call
from ace_env.tasks import Task, Turn
from synth import strategies
from synth.checks.parts import (
    CASCADE_RECOVERY_IN_TEXT,
    DISTRACTOR_NOT_NEW,
    DUPLICATE,
    EMPTY_ACCEPTED,
    GT_ERROR,
    GT_REJECTED,
    LOOKALIKE_ID_IN_TEXT,
    LOOKALIKE_NOT_SHOWN,
    NEAR_DUPLICATE_REASON,
    NO_TARGET,
    TARGET_ALTER_ACCEPTED,
    TARGET_ALTER_SKIPPED,
    TARGET_DROP_ACCEPTED,
    TEXT_ORDER,
    VALUE_MISSING,
    VALUE_UNOBTAINABLE,
    Seen,
    adjacent_positions,
    error_output,
    flat_calls,
    target_present,
    task_fingerprint,
)
from synth.checks.seeds import seed_problems, usable_seed
from synth.checks.values import value_provenance
from synth.pipeline import seeds_by_target
from synth.strategies.distractor import distractor_problems
from synth.strategies.lookalike import lookalike_problems, near_identical
from synth.taskcheck import check_task

TARGET = ("get_stock_info", "place_order")


@pytest.fixture(scope="module")
def seed():
    return next(t for t in bfcl.load_tasks("base") if adjacent_positions(t, TARGET) and usable_seed(t))


def _as_ace(task: Task, target=TARGET, **prov) -> Task:
    t = Task.from_dict(copy.deepcopy(task.to_dict()))
    t.id = f"test-{task_fingerprint(t)[:8]}-{random.random()}"
    t.source = "ace-test"
    t.provenance = {"target_edge": f"{target[0]}>{target[1]}", **prov}
    return t


def test_seed_is_valid_and_duplicates_are_caught(seed):
    seen: set[str] = set()
    first = check_task(_as_ace(seed), seen)
    assert first.valid, first.reasons
    assert first.fingerprint in seen
    again = check_task(_as_ace(seed), seen)
    assert not again.valid and again.reasons == [DUPLICATE]


def test_target_present(seed):
    assert target_present(_as_ace(seed))
    assert not target_present(_as_ace(seed, target=("mv", "cd")))


def test_no_target(seed):
    check = check_task(_as_ace(seed, target=("mv", "cd")))
    assert NO_TARGET in check.reasons


def test_gt_error(seed):
    t = _as_ace(seed)
    t.turns[0].ground_truth.append("get_stock_info(symbol='NOPE')")  # {"error": ...} output
    check = check_task(t)
    assert GT_ERROR in check.reasons


def test_gt_rejected_when_a_ground_truth_call_is_not_offered(seed):
    t = _as_ace(seed)
    # the ground truth calls a tool that is not offered: it is not executed, so the oracle
    # records a not_offered step (gt_error) and the verifier rejects the rollout
    t.tools = [n for n in t.tools if n != "place_order"]
    check = check_task(t)
    assert GT_ERROR in check.reasons and GT_REJECTED in check.reasons


def test_empty_accepted():
    task = Task("empty-1", "ace-test", "x", [Turn([{"role": "user", "content": "hi"}], [])], {},
                ["MathAPI"], ["add"], provenance={"target_edge": "add>add"})
    check = check_task(task)
    assert EMPTY_ACCEPTED in check.reasons and NO_TARGET in check.reasons


def _math_task(calls, target, tid):
    return Task(tid, "ace-test", "x", [Turn([{"role": "user", "content": "add 3 and 4, then 5 and 6"}], calls)],
                {}, ["MathAPI"], ["add", "multiply", "round_number"],
                provenance={"target_edge": f"{target[0]}>{target[1]}"})


def test_target_drop_accepted():
    # the second call repeats the first: dropping it still leaves its output in the rollout?
    # No: outputs are a multiset. Use a read-only target whose output equals an earlier one
    # in a turn whose state does not change: a duplicated identical call pair.
    task = _math_task(["add(a=3, b=4)", "add(a=3, b=4)"], ("add", "add"), "drop-1")
    # multiset rule: two identical outputs are needed; dropping one is rejected
    assert TARGET_DROP_ACCEPTED not in check_task(task).reasons
    # a task whose target step's output is the empty state-free echo of another turn
    task = Task("drop-2", "ace-test", "x", [
        Turn([{"role": "user", "content": "add 3 and 4"}], ["add(a=3, b=4)"]),
        Turn([{"role": "user", "content": "add 3 and 4 again"}], ["multiply(a=1, b=7)", "add(a=3, b=4)"]),
    ], {}, ["MathAPI"], ["add", "multiply"], provenance={"target_edge": "multiply>add"})
    # dropping the target add: its output {"result": 7} was already seen in turn 0, and
    # multiply(1, 7) also gives 7, so the multiset still holds 7 twice: accepted
    assert TARGET_DROP_ACCEPTED in check_task(task).reasons


def test_target_alter_accepted_and_skipped(seed):
    # ls(a=True) in a folder without hidden files: altering `a` changes nothing
    fs_seed = next(t for t in bfcl.load_tasks("base") if "GorillaFileSystem" in t.involved_classes)
    t = _as_ace(fs_seed, target=("pwd", "ls"))
    t.turns = [Turn([{"role": "user", "content": "where am I and what is here?"}], ["pwd()", "ls(a=True)"])]
    check = check_task(t)
    assert TARGET_ALTER_ACCEPTED in check.reasons
    t2 = _as_ace(fs_seed, target=("ls", "pwd"))
    t2.turns = [Turn([{"role": "user", "content": "what is here and where am I?"}], ["ls(a=True)", "pwd()"])]
    check2 = check_task(t2)
    assert TARGET_ALTER_SKIPPED in check2.notes and TARGET_ALTER_ACCEPTED not in check2.reasons


def test_value_missing_from_text(seed):
    task = _as_ace(seed)
    k = adjacent_positions(task, TARGET)[0]
    t, i, raw, _ = flat_calls(task)[k + 1]
    amount = next(v for v in parse_call(raw).kwargs.values() if isinstance(v, int) and v > 2)
    task.provenance["user_values"] = [amount]
    assert check_task(task).valid
    for turn in task.turns:
        for m in turn.user:
            m["content"] = m["content"].replace(str(amount), "some")
    check = check_task(task)
    assert VALUE_MISSING in check.reasons, (check.reasons, check.notes)


def _fs_task(calls, text, target):
    fs_seed = next(t for t in bfcl.load_tasks("base") if t.involved_classes == ["GorillaFileSystem"])
    t = _as_ace(fs_seed, target=target)
    t.turns = [Turn([{"role": "user", "content": text}], calls)]
    return t


def test_text_order_must_match_the_oracle():
    text = "Create a file called alpha_notes.txt, and after that make a folder called beta_dir."
    good = _fs_task(["touch(file_name='alpha_notes.txt')", "mkdir(dir_name='beta_dir')"], text, ("touch", "mkdir"))
    assert TEXT_ORDER not in check_task(good).reasons
    bad = _fs_task(["mkdir(dir_name='beta_dir')", "touch(file_name='alpha_notes.txt')"], text, ("mkdir", "touch"))
    check = check_task(bad)
    assert TEXT_ORDER in check.reasons, check.reasons


def test_value_not_obtainable():
    text = "Create a file called alpha_notes.txt."
    ok = _fs_task(["touch(file_name='alpha_notes.txt')", "ls()"], text, ("touch", "ls"))
    assert VALUE_UNOBTAINABLE not in check_task(ok).reasons
    bad = _fs_task(["touch(file_name='alpha_notes.txt')", "mkdir(dir_name='gamma_dir')"], text, ("touch", "mkdir"))
    check = check_task(bad)
    assert VALUE_UNOBTAINABLE in check.reasons and any("gamma_dir" in n for n in check.notes)


def test_near_duplicates_within_a_run_are_rejected(seed):
    seen = Seen()
    first = _as_ace(seed)
    assert check_task(first, seen).valid
    # same request and calls, another fingerprint (an output view of a tool it never calls)
    twin = _as_ace(seed)
    twin.output_views = [{"tool": "get_watchlist", "ops": [{"op": "wrap", "key": "data"}]}]
    for m in twin.turns[0].user:
        m["content"] = m["content"].replace(".", "!", 1)
    check = check_task(twin, seen)
    assert check.reasons == [NEAR_DUPLICATE_REASON], check.reasons
    other = next(t for t in bfcl.load_tasks("base") if adjacent_positions(t, TARGET) and t.id != seed.id
                 and usable_seed(t))
    assert NEAR_DUPLICATE_REASON not in check_task(_as_ace(other), seen).reasons


def _made(name, target, strength=0.7):
    for s in bfcl.load_tasks("all"):
        if not adjacent_positions(s, target) or not usable_seed(s):
            continue
        for i in range(4):
            task = strategies.synthesize(name, s, target, strength, random.Random(i))
            if task is not None:
                return task
    raise AssertionError(f"no {name} task for {target}")


def test_lookalike_text_with_the_id_is_rejected():
    task = _made("lookalike", ("get_stock_info", "place_order"))
    assert check_task(task).valid
    leaked = Task.from_dict(copy.deepcopy(task.to_dict()))
    leaked.turns[-1].user[-1]["content"] += f" (order {task.provenance['target_id']})"
    assert LOOKALIKE_ID_IN_TEXT in check_task(leaked).reasons


def test_a_lookalike_set_not_in_the_shown_result_is_rejected():
    task = _made("lookalike", ("get_stock_info", "place_order"))
    assert check_task(task).valid and not lookalike_problems(task)
    # the look-alikes put somewhere the agent never reads them (no view on a's result)
    hidden = Task.from_dict(copy.deepcopy(task.to_dict()))
    hidden.output_views = []
    assert LOOKALIKE_NOT_SHOWN in check_task(hidden).reasons
    # look-alikes claimed that a's shown result does not hold
    absent = Task.from_dict(copy.deepcopy(task.to_dict()))
    absent.provenance["lookalikes"] = [999999]
    assert LOOKALIKE_NOT_SHOWN in check_task(absent).reasons
    # values in the result, but not near-identical to the one passed on
    value = task.provenance["target_id"]
    unlike = Task.from_dict(copy.deepcopy(task.to_dict()))
    unlike.output_views[-1]["ops"].append({"op": "add", "fields": {"other": value * 3 + 1}})
    unlike.provenance["lookalikes"] = [value * 3 + 1]
    assert LOOKALIKE_NOT_SHOWN in check_task(unlike).reasons
    assert near_identical(12446, 14246) and near_identical("NVDA", "NVDX") and not near_identical(12446, 17446 + 1)


def test_cascade_text_that_states_the_recovery_is_rejected():
    task = _made("cascade", ("get_stock_info", "place_order"))
    assert check_task(task).valid
    told = Task.from_dict(copy.deepcopy(task.to_dict()))
    told.turns[0].user[-1]["content"] += " If the quote looks stale, ask again for a fresh one."
    assert CASCADE_RECOVERY_IN_TEXT in check_task(told).reasons
    # the old cascade's wording, too
    told.turns[0].user[-1]["content"] = "Book it with card 1234; if it's declined, use my backup card 5678."
    assert CASCADE_RECOVERY_IN_TEXT in check_task(told).reasons


def test_error_output():
    assert error_output('{"error": "nope"}')
    assert error_output('{"booking_status": false, "error": "Insufficient funds"}')
    assert error_output("Error during execution: boom")
    assert not error_output('{"result": 7}')
    assert not error_output("None")


# --------------------------------------------------------------------------- value provenance (issue 26)


def test_a_value_with_no_provenance_is_rejected():
    """A value neither in the text, nor produced by an earlier call, nor a tool default is rejected."""
    text = "Go into the folder called gamma_dir and create a file named alpha_notes.txt there."
    ok = _fs_task(["mkdir(dir_name='gamma_dir')", "cd(folder='gamma_dir')", "touch(file_name='alpha_notes.txt')"],
                  text, ("cd", "touch"))
    assert not value_provenance(ok)
    # the same calls, the folder's name gone from the text: nothing provides 'gamma_dir'
    bad = _fs_task(["mkdir(dir_name='gamma_dir')", "cd(folder='gamma_dir')", "touch(file_name='alpha_notes.txt')"],
                   "Make a new folder, go into it and create a file named alpha_notes.txt there.", ("cd", "touch"))
    check = check_task(bad)
    assert VALUE_UNOBTAINABLE in check.reasons and any("gamma_dir" in n for n in check.notes), check.notes


def test_a_value_printed_in_the_text_of_an_output_view_only_does_not_count():
    """Provenance is read from the executed outputs (replay), not from the text of the task file."""
    task = _fs_task(["touch(file_name='alpha_notes.txt')", "mkdir(dir_name='gamma_dir')"],
                    "Create a file called alpha_notes.txt, then a folder.", ("touch", "mkdir"))
    # a view that writes the name into touch's shown result does not make the value produced by a call
    task.output_views = [{"tool": "touch", "ops": [{"op": "add", "fields": {"hint": "gamma_dir"}}]}]
    assert [u.value for u in value_provenance(task)] == ["gamma_dir"]


def test_values_from_an_earlier_output_dates_and_defaults_are_provided():
    stock = next(t for t in bfcl.load_tasks("base")
                 if adjacent_positions(t, ("place_order", "get_order_details")) and usable_seed(t))
    # get_order_details(order_id=N): N is nowhere in the text, only in place_order's executed output
    assert not value_provenance(stock)
    fs = _fs_task(["ls(a=False)", "touch(file_name='alpha_notes.txt')"], "List the folder, then create alpha_notes.txt.",
                  ("ls", "touch"))
    assert not value_provenance(fs)  # a=False is ls's documented default


def test_bfcl_seeds_without_provenance_are_not_used():
    tasks = {t.id: t for t in bfcl.load_tasks("base")}
    # base 62 sends a message to 'USR002' (cousin Bob), an id no call looks up and the user never gives
    assert any("USR002" in p for p in seed_problems(tasks["multi_turn_base_62"]))
    by_target = seeds_by_target([{"from": "get_zipcode_based_on_city", "to": "estimate_distance"}], tasks)
    used = by_target[("get_zipcode_based_on_city", "estimate_distance")]
    assert used and "multi_turn_base_62" not in used
    assert all(usable_seed(tasks[i]) for i in used)


def test_a_distractor_already_offered_by_the_seed_is_rejected():
    task = _made("distractor", ("place_order", "get_order_details"))
    assert check_task(task).valid and not distractor_problems(task)
    added = task.provenance["added_distractors"]
    # wrong-way twins of the decision tool, none of them offered by the seed
    assert added and all(n in twins.twins_of("get_order_details") for n in added)
    assert not set(added) & set(task.provenance["seed_tool_names"])
    offered = Task.from_dict(copy.deepcopy(task.to_dict()))
    offered.provenance["seed_tool_names"] = offered.provenance["seed_tool_names"] + added[:1]
    assert DISTRACTOR_NOT_NEW in check_task(offered).reasons
    # the old kind: a TradingBot function BFCL already offers in every TradingBot turn
    stale = Task.from_dict(copy.deepcopy(task.to_dict()))
    stale.distractors = ["cancel_order"]
    stale.provenance["added_distractors"] = ["cancel_order"]
    check = check_task(stale)
    assert DISTRACTOR_NOT_NEW in check.reasons, check.reasons
    assert any("already offered" in n for n in check.notes)
