"""τ² synthesis (ace_env/tau2/strategies.py, synthesis.py, through the one pipeline): each strategy makes a task that ACE's verifier and τ²'s own evaluator pass, aimed
at its target, faithful in what it changed; perturbed tasks are rejected; task files read back exactly."""

from __future__ import annotations

import json
import random

import pytest
from tau2drafts import every_draft

from ace.cli import main
from ace_env.errors import TaskLoadError
from ace_env.tasksets import load_task_set
from ace_env.tau2.drafting import record
from ace_env.tau2.env import tool_kinds
from ace_env.tau2.strategies import (
    ANSWER_IN_SCENARIO,
    NOT_TOLD_APART,
    NOT_UNIQUE,
    TRAP_NOT_LIVE,
    Draft,
    _listed_with_others,
    _replace_id,
    target_positions,
)
from ace_env.tau2.synthesis import SYNTHESIS, assemble, usable_seeds
from ace_env.tau2.synthtasks import (
    GOLD_ERRORS,
    UNGROUNDED,
    SynthTau2Task,
    build_task,
    tau2_reward,
)
from ace_env.tau2.tasks import GoldAction, Tau2Task, load_tasks
from ace_env.tau2.verify import gold, replay_gold
from synth.pipeline import TARGET_LOST, SynthConfig, run, task_problems, write_tasks
from synth.registry import get, table_for

#: τ²'s strategies as the one registry holds them (callable: seed, target, strength, rng -> draft).
STRATEGIES = table_for(Tau2Task)


def check(task, draft, target, strategy):
    """Why a drafted τ² task may not be written: the one pipeline's checks (target, generic, declared)."""
    return task_problems(SYNTHESIS, get(strategy, Tau2Task), task, draft, target)


def synthesize_tau2(edge_rows, seeds, n, strategies=tuple(STRATEGIES), seed=0):
    """The one pipeline on τ² seeds, no rollouts."""
    return run(SYNTHESIS, Tau2Task, edge_rows, seeds, None, None,
               SynthConfig(n=n, strategies=tuple(strategies), seed=seed))

EDGES = {
    "airline": [("get_reservation_details", "update_reservation_flights"),
                ("get_user_details", "get_reservation_details"),
                ("search_direct_flight", "update_reservation_flights"),
                ("update_reservation_flights", "update_reservation_flights")],
    "retail": [("get_order_details", "modify_pending_order_address"), ("get_user_details", "get_order_details"),
               ("get_product_details", "exchange_delivered_order_items"),
               # a retail cascade follows a last write on an order that ships elsewhere than the account's address
               ("get_order_details", "return_delivered_order_items")],
}


def edges(domain):
    return [{"from": a, "to": b} for a, b in EDGES[domain]]


@pytest.fixture(scope="module")
def made():
    """One task per (domain, strategy) where the strategy applies to the domain's edges, made once."""
    out = {}
    for domain in EDGES:
        seeds = {t.id: t for t in load_tasks(domain)}
        for strategy in STRATEGIES:
            # lookalike: 12 of retail's 72 (seed, target) pairs on these edges carry it (one item the scenario names
            # held by one order only); seed 0's 8 draws miss them all, seed 1's third hits
            # airline depth: 2 of airline's seeds carry it (a reservation the user flies on and the scenario does
            # not cancel, issue 34's s5 review); seed 5's draws hit one
            # retail cascade: only after a last write on an order that ships elsewhere (5 of retail's seed pairs, s7
            # review); seed 2's draws hit one, and retail depth's too
            draw = {"lookalike": 1, "depth": 5 if domain == "airline" else 2, "cascade": 2}.get(strategy, 0)
            result = synthesize_tau2(edges(domain), seeds, 1, strategies=(strategy,), seed=draw)
            out[(domain, strategy)] = (result, seeds)
    return out


# The lookalike strategy is retail's only.  Airline ambiguity needs a live near miss (issue 34's s6): seeds 37 (no
# valid oracle, below) and 40 (update_reservation_passengers, not on these edges) carry it.  The
# one airline seed whose flight change changes the bag allowance (37, the cascade's trap) has a gold that is no
# valid oracle: no airline cascade either (issue 34's s6)
CASES = [("airline", s) for s in STRATEGIES if s not in ("lookalike", "cascade", "ambiguity")] + [
    ("retail", "ambiguity"), ("retail", "distractor"), ("retail", "depth"), ("retail", "cascade"), ("retail", "lookalike")]


@pytest.mark.parametrize("domain,strategy", CASES)
def test_each_strategy_makes_a_task_both_verifiers_pass(made, domain, strategy):
    result, seeds = made[(domain, strategy)]
    assert len(result.tasks) == 1, result.summary()
    task = result.tasks[0]
    seed = seeds[task.origin["seed"]]
    assert task.id == f"tau2:{domain}:{task.tau2_id}" and task.tau2_id.startswith("synth-")
    assert task.provenance["parents"] == [seed.id] and task.provenance["strategy"] == strategy
    a, b = task.origin["target"].split(">")
    assert (a, b) in EDGES[domain] and target_positions(task.agent_actions, (a, b))  # aimed at its target
    # ACE's verifier on the gold replay (copy-on-write DB) and τ²'s own evaluator on its τ² JSON, loaded back
    assert replay_gold(task).strict
    steps = list(gold(task).steps)
    assert not any(s.error for s in steps)
    assert tau2_reward(domain, json.loads(json.dumps(task.tau2)), steps) == 1.0
    scenario, gold_args = task.user_scenario, json.dumps([g.arguments for g in task.gold_actions])
    if strategy == "distractor":  # a look-alike added to the database; the scenario gives the id's ends only
        twin, of = task.origin["look_alike"], task.origin["of"]
        assert twin.lstrip("#") not in scenario and of.lstrip("#") not in scenario and f"ends with {of[-2:]}" in scenario
        assert sorted(twin) == sorted(of) and twin != of and task.origin["told_apart_by"] in scenario
        assert [g for g in task.gold_actions if g.name not in ("get_user_details", "get_reservation_details",
                                                               "get_order_details")] == \
            [g for g in seed.gold_actions if g.name not in ("get_user_details", "get_reservation_details",
                                                            "get_order_details")]
        added = task.tau2["initial_state"]["initialization_data"]["agent_data"]
        table = "orders" if domain == "retail" else "reservations"
        assert set(added) == {table, "users"} and set(added[table]) == {twin}
        written = json.dumps([g.arguments for g in task.gold_actions
                              if tool_kinds(domain)[("assistant", g.name)] == "write"])
        assert twin not in written
        # the user's listing the agent reads shows it
        assert any(twin in s.content for s in steps if s.call.name == "get_user_details")
    elif strategy == "lookalike":  # gold unchanged; a look-alike under a fresh id, one item in another variant
        assert task.gold_actions == seed.gold_actions
        twin, of, item = task.origin["look_alike"], task.origin["of"], task.origin["told_apart_by"]
        key, value = task.origin["attribute"]
        # the scenario gains one sentence, the item's option that the look-alike's copy of it does not have
        assert task.user_scenario.replace(task.origin["told"], "").split() == seed.user_scenario.split()
        assert f"{item.lower()} in question" in scenario and f"whose {key} is {value}" in scenario
        assert twin not in scenario and of not in scenario
        added = task.tau2["initial_state"]["initialization_data"]["agent_data"]
        assert set(added["orders"]) == {twin}
        (copied,) = [i for i in added["orders"][twin]["items"] if i["name"] == item]
        assert copied["options"][key] == task.origin["look_alike_value"] != value
        listing = next(iter(added["users"].values()))["orders"]
        assert listing.index(twin) < listing.index(of)  # met first
    elif strategy == "ambiguity":  # the entity is described, not named; the gold reads it before its use
        entity = task.origin["described"]
        assert entity.lstrip("#") not in scenario and entity in gold_args
        assert task.origin["description"] in scenario and "do not remember" in scenario
    elif strategy == "depth":  # one more step, whose argument only B's output gives; its answer is communicated
        added = task.agent_actions[-1]  # last: the user asks for it before ending the call
        assert task.agent_actions[:-1] == seed.agent_actions and added.name == task.origin["added_step"]
        assert all(v not in scenario for k, v in added.arguments.items() if k != "date")
        assert task.communicate_info[-1] == task.origin["answer"] and "COMMUNICATE" in task.reward_basis
    else:  # cascade: a second write right after B, the seed's last action
        j = target_positions(task.agent_actions, (a, b))[-1]
        assert j + 3 == len(task.agent_actions) and task.agent_actions[-1].name == task.origin["second_write"]
        assert len(task.agent_actions) == len(seed.agent_actions) + 1


def test_tau2_synthesis_is_seeded(made):
    result, seeds = made[("airline", "depth")]
    again = synthesize_tau2(edges("airline"), seeds, 1, strategies=("depth",), seed=5)  # the fixture's draw for airline depth
    assert [t.to_dict() for t in again.tasks] == [t.to_dict() for t in result.tasks]


def _draft(domain, strategy, avoid=()):
    seeds = usable_seeds({t.id: t for t in load_tasks(domain)})
    for target in EDGES[domain]:
        if set(target) & set(avoid):
            continue
        for seed in seeds.values():
            if target_positions(seed.agent_actions, target):
                draft = STRATEGIES[strategy](seed, target, 0.5, random.Random(0))
                if draft is not None:
                    return seed, target, draft
    raise AssertionError(f"no {strategy} draft on {domain}")


def test_a_distractor_whose_gold_takes_the_look_alike_is_rejected():
    seed, target, draft = _draft("retail", "distractor")
    assert check(assemble(seed, target, "distractor", draft), draft, target, "distractor") == []
    wrong = Draft(draft.trap["actions"], draft.instructions, draft.what, trap=draft.trap, details=draft.details)
    assert TRAP_NOT_LIVE in check(assemble(seed, target, "distractor", wrong), wrong, target, "distractor")


def test_a_lookalike_not_told_apart_or_passing_too_is_rejected():
    """Review s6 (issue 34, tasks 17 and 27): the scenario must state what tells the order from its look-alike, and
    the gold's writes taken on the look-alike must fail or leave another database."""
    seed, target, draft = _draft("retail", "lookalike")
    assert check(assemble(seed, target, "lookalike", draft), draft, target, "lookalike") == []
    # the scenario without the sentence that states the item's option: both orders fit what the user says
    mute = Draft(draft.actions, {**draft.instructions, "known_info": draft.instructions["known_info"].replace(
        draft.details["told"], "")}, draft.what, trap=draft.trap, agent_data=draft.agent_data, details=draft.details)
    assert NOT_TOLD_APART in check(assemble(seed, target, "lookalike", mute), mute, target, "lookalike")
    # the look-alike holding the very item the scenario states (s6's flaw: the same item ids in both orders)
    twin, name = draft.details["look_alike"], draft.details["told_apart_by"]
    real = next(i for i in record("retail", draft.details["of"]).model_dump(mode="json")["items"] if i["name"] == name)
    same = json.loads(json.dumps(draft.agent_data))
    same["orders"][twin]["items"] = [real if i["name"] == name else i for i in same["orders"][twin]["items"]]
    flawed = Draft(draft.actions, draft.instructions, draft.what, trap=draft.trap, agent_data=same,
                   details=draft.details)
    assert NOT_TOLD_APART in check(assemble(seed, target, "lookalike", flawed), flawed, target, "lookalike")
    # a "look-alike" that is the order itself: the gold's writes there give the gold's database
    itself = Draft(draft.actions, draft.instructions, draft.what, trap=draft.trap, agent_data=draft.agent_data,
                   details={**draft.details, "look_alike": draft.details["of"]})
    assert NOT_UNIQUE in check(assemble(seed, target, "lookalike", itself), itself, target, "lookalike")


def test_an_ambiguity_task_without_the_reads_that_resolve_it_is_rejected():
    seed, target, draft = _draft("retail", "ambiguity", avoid=("get_user_details",))
    assert check(assemble(seed, target, "ambiguity", draft), draft, target, "ambiguity") == []
    # the user's reservations unread: the described id is neither said nor shown by an earlier output
    bare = Draft([a for a in draft.actions if a.name != "get_user_details"], draft.instructions, draft.what,
                 details=draft.details)
    assert UNGROUNDED in check(assemble(seed, target, "ambiguity", bare), bare, target, "ambiguity")


def test_a_gold_call_that_errors_is_rejected():
    seed, target, draft = _draft("airline", "depth")
    broken = Draft(list(draft.actions), draft.instructions, draft.what, communicate_info=draft.communicate_info,
                   details={**draft.details, "added_step": "get_flight_status"})
    broken.actions[-1] = GoldAction("get_flight_status", {"flight_number": draft.details["flight"], "date": "2031-01-01"})
    assert GOLD_ERRORS in check(assemble(seed, target, "depth", broken), broken, target, "depth")


def test_a_depth_task_whose_scenario_gives_the_answer_away_is_rejected():
    seed, target, draft = _draft("airline", "depth")
    added = next(a for a in draft.actions if a.name == "search_direct_flight")
    told = dict(draft.instructions)
    told["known_info"] = (f"{told.get('known_info') or ''}\nThat flight goes from {added.arguments['origin']} to "
                          f"{added.arguments['destination']}.")
    leaky = Draft(draft.actions, told, draft.what, communicate_info=draft.communicate_info, details=draft.details)
    assert ANSWER_IN_SCENARIO in check(assemble(seed, target, "depth", leaky), leaky, target, "depth")


def test_a_draft_that_loses_its_target_is_rejected():
    seed, target, draft = _draft("retail", "cascade")
    lost = Draft([a for a in draft.actions if a.name != target[0]], draft.instructions, draft.what,
                 details=draft.details)
    assert check(assemble(seed, target, "cascade", lost), lost, target, "cascade") == [TARGET_LOST]


def test_tau2_evaluator_refuses_steps_that_do_not_do_the_gold(made):
    task = made[("retail", "cascade")][0].tasks[0]
    steps = [s for s in gold(task).steps if s.call.name != "modify_user_address"]
    assert tau2_reward("retail", task.tau2, steps) == 0.0


def test_task_file_round_trip_and_refusals(made, tmp_path):
    tasks = [r.tasks[0] for (d, s), (r, _) in made.items() if r.tasks]
    path = tmp_path / "t.jsonl"
    write_tasks(path, tasks)
    back = load_task_set(str(path), any_environment=True)
    assert list(back) == [t.id for t in tasks]
    assert all(isinstance(t, SynthTau2Task) and t.to_dict() == o.to_dict() for t, o in zip(back.values(), tasks))
    with pytest.raises(TaskLoadError, match="not supported by `this command`"):
        load_task_set(str(path))  # a command that does not take τ² tasks
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    edited = json.loads(json.dumps(rows[0]))
    edited["tau2"]["user_scenario"]["instructions"]["known_info"] += " You are in a hurry."
    (tmp_path / "e.jsonl").write_text(json.dumps(edited) + "\n")
    with pytest.raises(TaskLoadError, match=r"e\.jsonl:1: .*not what its τ² form gives"):
        load_task_set(str(tmp_path / "e.jsonl"), any_environment=True)
    (tmp_path / "d.jsonl").write_text(json.dumps(rows[0]) + "\n" + json.dumps(rows[0]) + "\n")
    with pytest.raises(TaskLoadError, match=r"d\.jsonl:2: .*repeats"):
        load_task_set(str(tmp_path / "d.jsonl"), any_environment=True)
    wrong = json.loads(json.dumps(rows[0]))  # a gold that errors, written as if it were consistent
    wrong["tau2"]["evaluation_criteria"]["actions"].append(
        {"action_id": "x", "requestor": "assistant", "name": "cancel_reservation",
         "arguments": {"reservation_id": "NOSUCH"}, "info": None, "compare_args": None})
    consistent = build_task(wrong["domain"], wrong["tau2"], wrong["origin"]).to_dict()
    (tmp_path / "w.jsonl").write_text(json.dumps(consistent) + "\n")
    with pytest.raises(TaskLoadError, match=r"w\.jsonl:1: the gold .* does not verify"):
        load_task_set(str(tmp_path / "w.jsonl"), any_environment=True)


def test_ambiguity_drops_a_sentence_that_only_states_the_id_and_rewrites_the_others():
    known = "You are James Taylor.\n\nYour user id is james_taylor_7043. \n\nYour reservation ID is 1N99U6."
    phrase = "your round trip reservation from LAS to IAH"
    assert _replace_id(known, "1N99U6", phrase, "reservation") == \
        "You are James Taylor.\n\nYour user id is james_taylor_7043."
    assert _replace_id("You want to change #W8665881 to Suite 641.", "#W8665881", "your order with a Kettle",
                       "order") == "You want to change your order with a Kettle to Suite 641."
    assert _replace_id("No id here. ", "1N99U6", phrase, "reservation") == "No id here. "
    # a blind review found "your round trip reservation from DTW to LGA for your DTW to LGA trip."
    stated = "Your user id is raj_brown_5782.\n\nThe reservation ID is VA5SGQ for your DTW to LGA trip."
    assert _replace_id(stated, "VA5SGQ", "your round trip reservation from DTW to LGA", "reservation") == \
        "Your user id is raj_brown_5782."


def test_ambiguity_leaves_an_id_named_in_a_list_of_ids_alone():
    """A blind review found "within reservation IDs your round trip reservation from LAS to ATL ... and 59XX6W"."""
    assert _listed_with_others("You want to cancel your flights within reservation IDs XEHM4B and 59XX6W.", "XEHM4B")
    assert _listed_with_others("Cancel XEHM4B, 59XX6W.", "59XX6W")
    assert not _listed_with_others("You want to change reservation XEHM4B to economy and add a bag.", "XEHM4B")
    for seed, draft in _drafts("airline", "ambiguity"):
        text = "\n".join(v for v in draft.instructions.values() if isinstance(v, str))
        assert " IDs your " not in text and " ids your " not in text, seed.id


def _drafts(domain: str, strategy: str):
    """Every draft the strategy makes from every seed of the domain, at each adjacent pair of its gold."""
    for seed in load_tasks(domain):
        pairs = {(a.name, b.name) for a, b in zip(seed.agent_actions, seed.agent_actions[1:])}
        for target in sorted(pairs):
            draft = STRATEGIES[strategy](seed, target, 0.5, random.Random(0))
            if draft is not None:
                yield seed, draft


def test_depth_adds_a_call_the_gold_does_not_make_on_a_value_only_b_gives():
    """A blind review found a depth step repeating a gold call, and one on a flight the agent itself had passed."""
    n = 0
    for domain in ("airline", "retail"):
        for seed, draft in _drafts(domain, "depth"):
            *before, added = draft.actions
            assert all((a.name, a.arguments) != (added.name, added.arguments) for a in before), seed.id
            if added.name == "search_direct_flight":
                assert f'"{draft.details["flight"]}"' not in json.dumps([a.arguments for a in before]), seed.id
            n += 1
    assert n >= 20


def test_a_cascade_write_changes_the_database():
    """A blind review found a second write setting the default address to the one the user already had."""
    from ace_env.tau2.env import pristine

    users = pristine("retail")[0].users
    n = 0
    for seed, draft in _drafts("retail", "cascade"):
        second = draft.actions[-1]
        assert second.name == "modify_user_address"
        current = users[second.arguments["user_id"]].address
        assert {k: getattr(current, k) for k in second.arguments if k != "user_id"} != \
            {k: v for k, v in second.arguments.items() if k != "user_id"}, seed.id
        n += 1
    assert n >= 1


def test_the_look_alike_is_in_the_same_state_for_ace_and_for_tau2():
    """ACE applies the task's added records on its copy-on-write view; τ² re-validates the whole database:
    the records, and the database hash, must come out the same."""
    from ace_env.tau2.env import new_environment, start

    seed, target, draft = _draft("retail", "distractor")
    task = assemble(seed, target, "distractor", draft)
    ours = start("retail", task.tau2_id).tools.db
    theirs = new_environment("retail")
    theirs.tools.update_db(task.tau2["initial_state"]["initialization_data"]["agent_data"])
    twin, user = draft.details["look_alike"], next(iter(draft.agent_data["users"]))
    assert ours.orders[twin].model_dump() == theirs.tools.db.orders[twin].model_dump()
    assert ours.users[user].model_dump() == theirs.tools.db.users[user].model_dump()
    assert twin in ours.users[user].orders
    assert start("retail", task.tau2_id).get_db_hash() == theirs.get_db_hash()


@pytest.mark.parametrize("domain", ["airline", "retail"])
def test_depth_adds_a_step_whose_argument_only_bs_output_gives(domain):
    """Review of 2026-12-04, task 11: an added product id already shown by A's output is not B's to give."""
    made = 0
    for seed, target, draft in every_draft(domain, "depth"):
        made += 1
        added = draft.actions[-1]
        value = json.dumps(draft.details["flight"] if domain == "airline" else added.arguments["product_id"])
        steps = [s for s in gold(seed).steps if s.call.requestor == "assistant"]
        j = target_positions(seed.agent_actions, target)
        b = [k + 1 for k in j if value in steps[k + 1].content]  # a B whose output names the value
        assert b and all(value not in s.content for s in steps[: b[0]]), (seed.id, target, added)
    assert made >= (3 if domain == "airline" else 5)  # airline: few reservations the user flies on, not cancelled


def test_depth_never_asks_about_a_flight_of_a_reservation_the_gold_cancels():
    """Review of 2026-12-04, task 12: the status of a flight in a reservation the customer just cancelled."""
    for seed, target, draft in every_draft("airline", "depth"):
        assert draft.actions[-1].name == "search_direct_flight"
        cancelled = {a.arguments["reservation_id"] for a in seed.agent_actions if a.name == "cancel_reservation"}
        flight = draft.details["flight"]
        shown_by = [s.content for s in gold(seed).steps if flight in s.content and "reservation_id" in s.content]
        assert not any(json.loads(c).get("reservation_id") in cancelled for c in shown_by if c.startswith("{")), seed.id


def test_a_task_whose_added_records_are_not_a_valid_database_is_refused_when_built():
    seed, target, draft = _draft("retail", "distractor")
    twin = draft.details["look_alike"]
    broken = Draft(draft.actions, draft.instructions, draft.what, trap=draft.trap, details=draft.details,
                   agent_data={"orders": {twin: {"order_id": twin, "status": "no such status"}}})
    with pytest.raises(TaskLoadError, match="not a valid retail database"):
        assemble(seed, target, "distractor", broken)


def test_ace_synth_check_rechecks_a_tau2_task_file(made, tmp_path, capsys):
    """`ace synth check` asks the file's environment for its synthesis: τ²'s generic checks, the target kept."""
    tasks = [r.tasks[0] for (d, s), (r, _) in made.items() if r.tasks]
    path = tmp_path / "t.jsonl"
    write_tasks(path, tasks)
    assert main(["synth", "check", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"tasks": len(tasks), "valid": len(tasks), "invalid": 0,
                                                   "reasons": {}}
    row = json.loads(path.read_text().splitlines()[0])
    row["origin"]["target"] = "no_such_tool>other"  # provenance only: the task's id and gold unchanged
    (tmp_path / "lost.jsonl").write_text(json.dumps(row) + "\n")
    assert main(["synth", "check", str(tmp_path / "lost.jsonl"), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["reasons"] == {TARGET_LOST: 1}


def _look_alikes():
    """Every lookalike draft on retail's seeds, at each adjacent pair of their golds, under a few rng seeds."""
    for rng_seed in range(3):
        for seed in load_tasks("retail"):
            acts = seed.agent_actions
            for target in sorted({(a.name, b.name) for a, b in zip(acts, acts[1:])}):
                draft = STRATEGIES["lookalike"](seed, target, 0.5, random.Random(rng_seed))
                if draft is not None:
                    yield seed, draft



def test_the_look_alike_is_a_consistent_order_told_apart_by_the_option_the_scenario_states():
    """Review of 2026-12-07 (tasks 7-36): the replaced item kept another product's options, order and tracking ids
    repeated, the named item was in another order as well.  Review s6 (issue 34, tasks 17 and 27): the look-alike held
    the items the gold writes under the same ids and the scenario never said the named items shared one order, so
    the gold's writes on the look-alike met the request as well.  Now the look-alike differs from the order in one
    option of one item the scenario names, and the scenario states that item's value, which one order alone holds."""
    from ace_env.tau2.env import pristine
    from ace_env.tau2.strategies import instructions_of, scenario_text

    db = pristine("retail")[0]
    n, seeds = 0, set()
    for seed, draft in _look_alikes():
        d = draft.details
        copy, real = draft.agent_data["orders"][d["look_alike"]], db.orders[d["of"]].model_dump(mode="json")
        (new,) = [i for i in copy["items"] if i not in real["items"]]
        (old,) = [i for i in real["items"] if i not in copy["items"]]
        variant = db.products[new["product_id"]].variants[new["item_id"]]  # a real variant of the same product
        assert new["name"] == old["name"] == d["told_apart_by"] and new["product_id"] == old["product_id"], seed.id
        assert new["options"] == dict(variant.options) and new["price"] == variant.price, seed.id
        key, value = d["attribute"]
        assert {k for k in old["options"] if old["options"][k] != new["options"][k]} == {key}, seed.id
        assert old["options"][key] == value and new["options"][key] == d["look_alike_value"], seed.id
        assert [i["name"] for i in real["items"]] == [i["name"] for i in copy["items"]], seed.id  # in place
        user = copy["user_id"]
        orders = [db.orders[o].model_dump(mode="json") for o in db.users[user].orders] + [copy]
        order_ids = [o["order_id"] for o in orders]
        tracking = [t for o in orders for f in o["fulfillments"] for t in f["tracking_id"]]
        assert len(set(order_ids)) == len(order_ids) and len(set(tracking)) == len(tracking), seed.id
        shipped = {x for f in copy["fulfillments"] for x in f["item_ids"]}
        assert shipped <= {i["item_id"] for i in copy["items"]}, seed.id  # its fulfillments ship its own items
        # the scenario states the value, which exactly one of the user's orders (the look-alike among them) holds
        before, after = scenario_text(instructions_of(seed)), scenario_text(draft.instructions)
        assert d["told"] in after and d["told"] not in before and f"whose {key} is {value}" in d["told"], seed.id
        assert d["told_apart_by"].lower() in before.lower(), seed.id
        holds = [any(i["name"] == d["told_apart_by"] and i["options"][key] == value for i in o["items"])
                 for o in orders]
        assert sum(holds) == 1 and holds[order_ids.index(d["of"])], seed.id
        # the other items the gold writes, or the scenario names and no other order holds, came in that order: the
        # sentence says so
        written = json.dumps([a.arguments for a in draft.actions if a.arguments.get("order_id") == d["of"]
                              and tool_kinds("retail")[("assistant", a.name)] == "write"])
        held = {i["name"] for o in orders if o["order_id"] not in (d["of"], d["look_alike"]) for i in o["items"]}
        others = {i["name"].lower() for i in real["items"] if f'"{i["item_id"]}"' in written
                  or (i["name"].lower() in before.lower() and i["name"] not in held)} - {old["name"].lower()}
        assert all(f"the {o}" in d["told"] for o in others) and ("in one order" in d["told"]) == bool(others), seed.id
        n += 1
        seeds.add(seed.id)
    assert n >= 30 and len(seeds) >= 15


def test_the_agent_lured_by_the_look_alike_acts_on_its_variant_of_the_item():
    """The trap's write is the gold's first write on the order, taken on the look-alike with the look-alike's
    variant of the item the scenario names (what an agent that took the first order it met would send)."""
    n = 0
    for seed, draft in _look_alikes():
        d = draft.details
        lured, gold_write = draft.trap["actions"][d["lured_step"]], draft.actions[d["lured_step"]]
        assert lured.name == gold_write.name and lured.arguments["order_id"] == d["look_alike"], seed.id
        copy = draft.agent_data["orders"][d["look_alike"]]
        items = lured.arguments.get("item_ids")
        if items is not None:  # only the look-alike's own items, the varied one in its look-alike variant
            assert set(items) <= {i["item_id"] for i in copy["items"]}, seed.id
            n += 1
    assert n >= 10
