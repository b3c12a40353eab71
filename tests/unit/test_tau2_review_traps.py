"""Issue 34's s5 τ² review: what its incoherent tasks did is no longer made (depth on a trip the user cancels or does
not fly on, "the one you have" with two options of a product, a cascade after several writes of its kind, garbled
or redundant descriptions), and the strategies record the trap each task holds (the wrong answer a shortcut gives),
checked to differ from the gold's; the sample spreads over customers."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
from benchmod import load_benchmark
from tau2drafts import every_draft

from ace_env.tau2.chains import FREE_BAGS, _flies, cancels
from ace_env.tau2.drafting import (
    ENTITY,
    entities_of,
    fits_one,
    instructions_of,
    is_write,
    live_miss,
    mentions,
    order_matches,
    outputs,
    owner,
    record,
    replayed_output,
    scenario_text,
    traits,
)
from ace_env.tau2.env import pristine
from ace_env.tau2.strategies import SHORTCUT_RIGHT, _replace_id, shortcut_problems
from ace_env.tau2.strategies import STRATEGIES as DECLARED
from ace_env.tau2.tasks import GoldAction, Tau2Task, load_tasks
from synth.registry import table_for

STRATEGIES = table_for(Tau2Task)


def _seed(domain, n):
    return next(t for t in load_tasks(domain) if t.tau2_id == str(n))


# --------------------------------------------------------------------------- 1. coherence


def test_no_depth_on_the_reviews_incoherent_seeds():
    # s5 tasks 19, 21 (Amelia Davis cancels, UDMOP1 survives), 20 (the user is no passenger of 35V5SM), 38 (two
    # skateboard options in #W6111398)
    assert not list(every_draft("airline", "depth", {"39", "41", "43"}))
    for _, _, draft in every_draft("retail", "depth", {"34"}):
        assert draft.details["item_id"] != "4293355847"


def test_depth_is_on_a_record_the_user_keeps_and_flies_on_with_one_option_of_the_product():
    n = {"airline": 0, "retail": 0}
    for domain, key in (("airline", "reservation_id"), ("retail", "order_id")):
        for seed, _, draft in every_draft(domain, "depth"):
            text = scenario_text(instructions_of(seed))
            out = next(o for o in outputs(seed) if isinstance(o, dict) and o.get(key) and
                       (draft.details.get("flight") in str(o.get("flights")) if domain == "airline"
                        else draft.details["item_id"] in str(o.get("items"))))
            assert not cancels(text, out[key], entities_of(domain, out["user_id"])), seed.id
            if domain == "airline":
                assert _flies(out), seed.id
            else:
                product = next(i["product_id"] for i in out["items"] if i["item_id"] == draft.details["item_id"])
                assert sum(i["product_id"] == product for i in out["items"]) == 1, seed.id
                # s6 task 18: never an item the gold returns, exchanges or changes (the customer keeps it)
                writes = [a for a in seed.agent_actions if is_write(seed, a)]
                assert draft.details["item_id"] not in str([a.arguments for a in writes]), seed.id
            n[domain] += 1
    assert n["airline"] >= 2 and n["retail"] >= 20, n


def test_cancels_reads_the_scenario():
    assert cancels("You want to cancel all your upcoming flights.", "AAA111", ["AAA111", "BBB222"])
    assert cancels("Cancel AAA111 please.", "AAA111", ["AAA111", "BBB222"])
    assert not cancels("Cancel BBB222 please.", "AAA111", ["AAA111", "BBB222"])  # another one, by its id
    assert not cancels("Change your flight.", "AAA111", ["AAA111"])


def test_no_cascade_after_several_writes_of_its_kind():
    # s5 task 15: seed airline 44 upgrades three reservations; "that reservation" said none of them
    assert not list(every_draft("airline", "cascade", {"44"}))
    for seed, target, draft in every_draft("retail", "cascade"):
        assert sum(a.name == target[1] for a in seed.agent_actions) == 1


def test_a_confirmation_number_sentence_goes_whole():
    # s5 task 39: "Your confirmation number is JMO1MG." became "Your confirmation your one-way trip ..."
    text = "You are Anya Garcia.\n\nYour confirmation number is JMO1MG.\n\nYou want to know the bags."
    out = _replace_id(text, "JMO1MG", "your one-way trip reservation from DEN to MIA", "reservation")
    assert "JMO1MG" not in out and "confirmation" not in out and "Anya Garcia" in out and "bags" in out
    for _, _, draft in every_draft("airline", "ambiguity"):
        said = scenario_text(draft.instructions)
        assert "confirmation your" not in said.lower() and "JMO1MG" not in said


def test_no_redundant_description():
    # s5 tasks 2 ("the Desk Lamp in your order that includes the desk lamp") and 23 ("from Boston to Minneapolis
    # under your one-way trip reservation from BOS to MSP")
    for domain, seed, entity in (("retail", "44", "#W9300146"), ("airline", "12", "YAX4DR")):
        for _, _, draft in every_draft(domain, "ambiguity", {seed}):
            assert draft.details["described"] != entity, draft.details
    for _, _, draft in every_draft("retail", "ambiguity"):
        phrase, item = draft.details["description"], draft.details["by"]["item"].lower()
        for line in scenario_text(draft.instructions).splitlines():
            if phrase in line:
                assert item not in line.replace(phrase, "").lower(), line


# --------------------------------------------------------------------------- 2. traps


def test_retail_depth_counts_only_options_in_stock_and_records_the_count_of_all():
    n = 0
    for seed, _, draft in every_draft("retail", "depth"):
        if draft.details["kind"] != "count":
            continue
        out = replayed_output(seed, draft.actions)
        others = [v for k, v in out["variants"].items() if k != draft.details["item_id"]]
        (trap,) = draft.details["trap"]
        assert trap["answer"] == str(len(others)) != draft.communicate_info[-1]
        assert draft.communicate_info[-1] == str(sum(v["available"] for v in others))
        n += 1
    assert n >= 5


def test_airline_depth_records_the_shortcut_prices():
    seen = set()
    for seed, _, draft in every_draft("airline", "depth"):
        d = draft.details
        for trap in d.get("trap", []):
            assert trap["answer"] != d["answer"]
            if trap["shortcut"].startswith("the economy price"):
                assert d["cabin"] != "economy"
                out = replayed_output(seed, draft.actions)
                row = next(f for f in out if f["flight_number"] == d["flight"])
                assert trap["answer"] == f"{row['prices']['economy']:g}"
            seen.add(trap["shortcut"].split(" (")[0])
        # s6 task 19's "the second of your flights on 2024-05-28" read two ways (the reservation's second flight)
        assert "second of your flights" not in draft.instructions["task_instructions"]
    # "the later of your two flights on 2024-05-28": the reservation's second flight is another one
    assert "the economy price" in seen and "the reservation's second flight" in seen, seen


def test_the_airline_cascade_is_made_only_where_the_stale_allowance_pays_another_number_of_bags():
    seed = _seed("airline", 37)  # economy -> business, silver, two passengers
    draft = STRATEGIES["cascade"](seed, ("search_direct_flight", "update_reservation_flights"), 0.5,
                                  random.Random(0))
    d = draft.details
    assert d["cabin_before"] == "economy" and d["trap"][0]["answer"] != str(d["nonfree_baggages"])
    passengers = len(record("airline", draft.actions[-1].arguments["reservation_id"]).passengers)
    total = draft.actions[-1].arguments["total_baggages"]
    assert int(d["trap"][0]["answer"]) == max(0, total - FREE_BAGS["silver"]["economy"] * passengers)
    assert d["nonfree_baggages"] == max(0, total - FREE_BAGS["silver"]["business"] * passengers)
    assert "four checked bags" in draft.instructions["task_instructions"]
    # s5 task 12: a flight change in the same cabin gives no trap, so no cascade
    assert not list(every_draft("airline", "cascade", {"32"}))


def test_ambiguity_has_a_live_near_miss_the_description_rules_out():
    # s6: 0 of 7 ambiguity tasks adversarial (no competing record, or one the pending-only write refuses)
    n = {"airline": 0, "retail": 0}
    for domain in n:
        for seed, _, draft in every_draft(domain, "ambiguity"):
            d = draft.details
            assert owner(domain, d["near_miss"]) == owner(domain, d["described"])
            assert live_miss(seed, draft.actions, d["described"], d["near_miss"]), seed.id  # the writes accept it
            assert fits_one(domain, d["described"], d["description"], d.get("by"))
            assert not fits_one(domain, d["near_miss"], d["description"], d.get("by"))
            if domain == "airline":  # the near miss shares all but one of the traits said
                said = d["by"]["traits"]
                assert sum(traits(d["near_miss"])[k] != v for k, v in said.items()) == 1, d
                # s6: the reason for the call named the route, which the near miss did not share
                real = record("airline", d["described"])
                if mentions(scenario_text(instructions_of(seed)), real.origin):
                    assert traits(d["near_miss"])["route"] == traits(d["described"])["route"], d
            else:
                assert order_matches(record("retail", d["near_miss"]), d["by"]["item"], None)
            n[domain] += 1
    assert n["airline"] >= 2 and n["retail"] >= 1, n


def test_live_miss_refuses_a_near_miss_the_write_refuses():
    # s6 task 8: Fatima Johnson's #W9389413 holds the smart watch too, but is not pending: the address change on it
    # fails (her pending #W5199551, with the action camera too, takes it)
    seed = _seed("retail", 17)
    acts = list(seed.agent_actions)
    assert record("retail", "#W9389413").status != "pending"
    assert not live_miss(seed, acts, "#W8665881", "#W9389413")
    assert live_miss(seed, acts, "#W8665881", "#W5199551")
    assert not live_miss(seed, acts, "#W8665881", "#W8665881")  # the same record: the same database


def test_the_distractor_scenario_gives_only_the_ids_ends_and_the_detail_the_twin_lacks():
    # s6 task 4: the scenario named the whole id, so its swapped-digit twin caught no one
    n = {"airline": 0, "retail": 0}
    for domain, table in (("airline", "reservations"), ("retail", "orders")):
        for seed, _, draft in every_draft(domain, "distractor"):
            d, said = draft.details, scenario_text(draft.instructions)
            real, twin = d["of"], d["look_alike"]
            assert not mentions(said, real) and not mentions(said, twin)
            head = real[:4] if domain == "retail" else real[:2]
            assert twin != real and twin.startswith(head) and twin[-2:] == real[-2:]
            assert f"starts with {head} and ends with {real[-2:]}" in said and d["told_apart_by"] in said
            copy = draft.agent_data[table][twin]
            mine = record(domain, real).model_dump(mode="json")
            changed = [k for k in mine if k != ENTITY[domain] and copy[k] != mine[k]]
            if domain == "airline":  # one passenger fewer (and paid for one fewer: s7 task 19), or another cabin
                assert changed in (["passengers", "payment_history"], ["cabin"]), changed
                if changed[0] == "passengers":
                    n_real, n_copy = len(mine["passengers"]), len(copy["passengers"])
                    assert n_copy == n_real - 1 and [round(p["amount"] * n_copy / n_real, 2) for p in
                                                     mine["payment_history"]] == [p["amount"] for p in
                                                                                   copy["payment_history"]]
            else:  # one item in another option of its product; its payment pays it, its own parcels (s7 1, 17)
                diff = [(a, b) for a, b in zip(mine["items"], copy["items"]) if a != b]
                assert len(diff) == 1 and diff[0][0]["product_id"] == diff[0][1]["product_id"]
                assert [k for k in changed if k != "fulfillments"] == ["items", "payment_history"], changed
                assert ("fulfillments" in changed) == bool(mine["fulfillments"])  # a pending order has none yet
                paid = [(a["amount"], b["amount"]) for a, b in zip(mine["payment_history"], copy["payment_history"])
                        if a != b]
                assert len(paid) == 1 and round(paid[0][1] - paid[0][0], 2) == \
                    round(diff[0][1]["price"] - diff[0][0]["price"], 2)
                ours = {t for f in mine["fulfillments"] for t in f["tracking_id"]}
                assert not ours & {t for f in copy["fulfillments"] for t in f["tracking_id"]}
            # the gold finds it by reading the user's list, then the record, before it writes
            names = [a.name for a in draft.actions]
            assert "get_user_details" in names and draft.actions.index(next(
                a for a in draft.actions if a.arguments.get(ENTITY[domain]) == real)) > names.index("get_user_details")
            assert all(twin not in str(a.arguments) for a in draft.actions)
            assert any(twin in str(a.arguments) for a in draft.trap["actions"])
            n[domain] += 1
    assert n["airline"] >= 4 and n["retail"] >= 4, n


def test_a_trap_that_gives_the_gold_answer_is_refused():
    draft = SimpleNamespace(details={"answer": "51", "trap": [{"shortcut": "x", "answer": "51"}]})
    assert shortcut_problems(SimpleNamespace(draft=draft))
    draft.details["trap"][0]["answer"] = "146"
    assert not shortcut_problems(SimpleNamespace(draft=draft))
    for declared in DECLARED:
        if declared.name in ("depth", "cascade", "ambiguity"):
            assert SHORTCUT_RIGHT in {c.reason for c in declared.checks}, declared.name


# --------------------------------------------------------------------------- 3. the sample's spread


@pytest.fixture(scope="module")
def sampler():
    return load_benchmark("review_sample_tau2.py", "review_sample_tau2_traps_under_test")


def _fake(strategy, seed, user, record_id, trap=False):
    origin = {"strategy": strategy, "seed": seed, "described": record_id, **({"trap": [{}]} if trap else {})}
    return SimpleNamespace(origin=origin, domain="retail", id=f"{strategy}-{seed}-{user}",
                           gold_actions=[GoldAction("get_user_details", {"user_id": user})])


def test_the_sample_takes_at_most_two_tasks_per_customer_and_never_the_same_record_twice(sampler):
    # one customer owns every seed task's lookalike (s5: Mei Kovacs, 5 of 9); the others are spread
    tasks = [_fake(s, f"s{i}", "mei" if s == "lookalike" else f"u{i}", "#W1" if s == "lookalike" else f"#W{i}")
             for s in sampler.TAU2_STRATEGIES for i in range(20)]
    tasks += [_fake("depth", f"t{i}", "ann", "#W9") for i in range(5)]  # same customer, strategy, record
    rows, _ = sampler.sample(tasks, 30, 6, 2, 3, per_user=2)
    users = [sampler.user_of(t) for t in rows]
    assert max(users.count(u) for u in users) <= 2
    assert users.count("mei") == 1  # the second would be the same customer, strategy and record
    assert users.count("ann") <= 1
    keys = [(u, t.origin["strategy"], sampler.record_of(t)) for u, t in zip(users, rows)]
    assert len(set(keys)) == len(keys)


def test_the_sample_takes_tasks_that_record_a_trap_first(sampler):
    tasks = [_fake("depth", f"s{i}", f"u{i}", f"#W{i}", trap=i % 3 == 0) for i in range(12)]
    rows, _ = sampler.sample(tasks, 4, 4, 2, 1)
    assert all(sampler.trapped(t) for t in rows)


def test_user_of_reads_the_owner_where_no_user_id_is_passed(sampler):
    order = next(iter(pristine("retail")[0].orders))
    t = SimpleNamespace(origin={}, domain="retail",
                        gold_actions=[GoldAction("get_order_details", {"order_id": order})])
    assert sampler.user_of(t) == owner("retail", order) and sampler.record_of(t) == order


def test_a_seed_tasks_second_task_is_taken_where_its_first_repeats_a_customer_and_record(sampler):
    # s6's run: depth ran out at 17 while seed tasks had other records; one task per seed task and strategy still
    tasks = [_fake("depth", "s1", "ann", "#W1", trap=True), _fake("depth", "s0", "ann", "#W1"),
             _fake("depth", "s0", "ann", "#W2")]
    tasks[2].id += "-b"
    rows, _ = sampler.sample(tasks, 3, 3, 2, 1)
    assert sorted(sampler.record_of(t) for t in rows) == ["#W1", "#W2"]
    assert sorted(t.origin["seed"] for t in rows) == ["s0", "s1"]


def test_a_depth_tasks_record_is_the_item_or_the_reservation_it_asks_about(sampler):
    # two depth questions about different products of one order are two tasks; about one product, one; about the
    # two flights of one reservation, one (blind review s7, tasks 8 and 11: the same task but "earlier"/"later")
    t = SimpleNamespace(origin={"strategy": "depth", "item_id": "123"}, domain="retail",
                        gold_actions=[GoldAction("get_order_details", {"order_id": "#W1"})])
    assert sampler.record_of(t) == "123"
    t = SimpleNamespace(origin={"strategy": "depth", "flight": "HAT001"}, domain="airline",
                        gold_actions=[GoldAction("get_reservation_details", {"reservation_id": "ABC123"})])
    assert sampler.record_of(t) == "ABC123"
