"""Seeds whose ground truth uses a value nothing provides: repaired with the lookup that provides it, or dropped."""

from __future__ import annotations

from ace_env import bfcl
from ace_env.verifier import ground_truth_rollout, verify
from synth.checks.parts import adjacent_positions
from synth.checks.seeds import seed_problems
from synth.checks.values import Produced, identifier_in_text, identifier_like, value_provenance
from synth.pipeline import seeds_by_target
from synth.repair import repair_provenance, usable_version

BOOK = ("book_flight", "retrieve_invoice")


def _base(n: int):
    return next(t for t in bfcl.load_tasks("base") if t.id == f"multi_turn_base_{n}")


def test_a_value_a_lookup_provides_is_repaired_by_adding_the_lookup():
    seed = _base(91)  # messages a user id the user names only as 'Michael'
    assert any(u.param == "receiver_id" for u in value_provenance(seed))
    fixed = repair_provenance(seed)
    assert fixed is not None and not value_provenance(fixed) and not seed_problems(fixed)
    added = fixed.provenance["repaired"]
    assert added == ["get_user_id(user='Michael')"]
    calls = [c for t in fixed.turns for c in t.ground_truth]
    first_use = next(i for i, c in enumerate(calls) if "receiver_id" in c)
    assert calls.index(added[0]) == first_use - 1
    assert verify(fixed, ground_truth_rollout(fixed)).reward == 1.0


def test_a_value_no_lookup_provides_is_not_repaired():
    seed = _base(62)  # a message text the user describes as a template ('... is xxx km.') and Bob's id
    assert repair_provenance(seed) is None and usable_version(seed) is None


def test_repaired_seeds_feed_the_targets_that_had_almost_none():
    tasks = {t.id: t for t in bfcl.load_tasks("base")}
    plain = [i for i, t in tasks.items() if adjacent_positions(t, BOOK) and not seed_problems(t)]
    used = seeds_by_target([{"from": BOOK[0], "to": BOOK[1]}], tasks)[BOOK]
    assert len(used) > len(plain)
    for i in used:
        seed = usable_version(tasks[i])
        assert seed is not None and not seed_problems(seed) and adjacent_positions(seed, BOOK)
    repaired = [usable_version(tasks[i]) for i in used if i not in plain]
    assert repaired and all(s.provenance["repaired"] for s in repaired)
    # airport codes the user names only as cities come from the airport lookup now
    assert any(c.startswith("get_nearest_airport_by_city(") for s in repaired for c in s.provenance["repaired"])


def test_an_identifier_is_provided_only_as_an_exact_whole_token():
    """'Zeta Corp' does not write the ticker 'ZETA', 'Omega' does not write 'OMEG' (review v2: 2, 7, 8, 16, 33)."""
    assert identifier_like("ZETA") and identifier_like("USR002") and not identifier_like("Zeta Corp")
    assert not identifier_in_text("ZETA", "Add Zeta Corp to my watchlist")
    assert not identifier_in_text("OMEG", "the stock of Omega Industries")
    assert not identifier_in_text("OMEG", "OMEGA is listed")
    assert identifier_in_text("ZETA", "buy 'ZETA' shares")
    assert not Produced('{"symbol": "ZETAX"}').has("ZETA") and Produced('{"symbol": "ZETA"}').has("ZETA")
    assert not Produced('{"name": "zeta"}').has("ZETA")


def test_a_ticker_guessed_from_a_company_name_is_repaired_with_the_symbol_lookup():
    seed = _base(107)  # places orders for 'ZETA', the user only says 'Zeta Corp'
    assert "ZETA" in [u.value for u in value_provenance(seed)]
    fixed = repair_provenance(seed)
    assert fixed is not None and not value_provenance(fixed)
    assert fixed.provenance["repaired"] == ["get_symbol_by_name(name='Zeta Corp')"]
    assert verify(fixed, ground_truth_rollout(fixed)).reward == 1.0


def test_a_company_name_with_its_abbreviation_point_is_looked_up_whole():
    seed = _base(114)  # "the current price of 'Quasar Ltd.'", ground truth uses 'QUAS'
    fixed = repair_provenance(seed)
    assert fixed is not None and fixed.provenance["repaired"] == ["get_symbol_by_name(name='Quasar Ltd.')"]
    assert not value_provenance(fixed)
