"""Yield (issue 34, item 3): the one line that says which limit bound a short run, and the ``in_turn`` schedule's
second pass (a seed that gave a task drawn again, kept only where the task differs), on a stand-in environment."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ace_env.synthesis import Declared, Synthesis
from synth.pipeline import IN_TURN_ATTEMPTS, SynthConfig, synthesize_in_turn
from synth.registry import register_synthesis
from synth.yieldlimit import Yield, losses, stop_reason


def _y(**kw):
    base = dict(asked=60, made=20, attempted=100, budget=480, edges=3, draws=100, strategies=5)
    return Yield(**{**base, **kw})


def test_no_line_when_the_run_made_what_it_was_asked():
    assert stop_reason(_y(made=60)) is None and stop_reason(_y(made=61)) is None


def test_each_limit_is_named_in_one_line_with_what_to_change():
    cases = {
        "bound by edges:": _y(edges=0, draws=0),
        "bound by edges and seeds per edge": _y(draws=20),
        "bound by the attempt budget": _y(attempted=480, rejections=Counter(synthesis_failed=400)),
        "bound by strategies": _y(rejections=Counter(synthesis_failed=70, target_lost=5, duplicate=5)),
        "bound by the diversity rule": _y(rejections=Counter(synthesis_failed=10, near_duplicate=30,
                                                             same_base_task=20)),
    }
    for phrase, y in cases.items():
        line = stop_reason(y)
        assert line is not None and "\n" not in line and line.startswith("wrote 20 of 60 tasks: ")
        assert phrase in line, (phrase, line)
        assert any(flag in line for flag in ("--target", "--tasks", "--strategy", "fewer tasks")), line


def test_the_diversity_rule_asks_for_more_base_tasks_not_more_rounds():
    # measured: on a 1,500-rollout BFCL scope, --n 120 made 108, 107 with --rounds 3 and 106 with --plans 16
    line = stop_reason(_y(schedule="rounds", rejections=Counter(duplicate=60)))
    assert "more seed tasks that hold these edges (--tasks)" in line and "draw on the same base tasks" in line


def test_losses_counts_a_result():
    @dataclass
    class R:
        tasks: list
        attempted: int
        rejections: Counter

    y = losses(R([1, 2], 9, Counter(synthesis_failed=4, duplicate=3)), 10, {("a", "b"): ["s1", "s2"], ("c", "d"): []},
               3, "in_turn", 80)
    assert (y.made, y.edges, y.draws, y.no_draft, y.diversity, y.failed_checks) == (2, 1, 6, 4, 3, 0)


# ----------------------------------------------------------------------------- the second pass, on a stand-in


@dataclass
class Seed:
    id: str
    source: str = "stand-in"


class SeedKind(Seed):
    pass


class FixedKind(Seed):
    pass


def _synthesis(build):
    return Synthesis(
        strategies=(Declared("pick", definition="d", needs="n", build=build),),
        usable=lambda seeds: dict(seeds), seeds_by_target=lambda edges, seeds: {}, has_target=lambda t, target: True,
        assemble=lambda seed, target, strategy, draft: Seed(f"{seed.id}-{draft}"), check=lambda task: [],
        verify=lambda task, turns, rid: (1.0, None), with_outcome=lambda task, outcome: task,
        domain=lambda t: "d")


#: A builder whose draft depends on its generator (another draw of a seed: another task), and one whose does not.
RANDOM = register_synthesis(SeedKind, _synthesis(lambda seed, target, strength, rng: rng.randrange(10**6)))
FIXED = register_synthesis(FixedKind, _synthesis(lambda seed, target, strength, rng: 0))


def _run(synthesis, kind, n):
    seeds = {i: kind(i) for i in ("s1", "s2")}
    return synthesize_in_turn(synthesis, kind, seeds, {("a", "b"): ["s1", "s2"]}, None,
                              SynthConfig(n=n, strategies=("pick",)))


def test_a_seed_that_gave_a_task_is_drawn_again_when_the_first_pass_falls_short():
    result = _run(RANDOM, SeedKind, 10)
    assert len(result.tasks) == 4 and result.attempted == 4  # two seeds, each twice
    assert len({t.id for t in result.tasks}) == 4
    assert result.budget == IN_TURN_ATTEMPTS * 10


def test_a_second_draw_that_makes_the_same_task_is_a_duplicate_and_the_line_says_seeds_bound():
    result = _run(FIXED, FixedKind, 10)
    assert len(result.tasks) == 2 and result.rejections == Counter(duplicate=2)
    line = stop_reason(losses(result, 10, {("a", "b"): ["s1", "s2"]}, 1, "in_turn", result.budget))
    assert "bound by edges and seeds per edge" in line and "2 (seed, strategy) draws for 10 tasks" in line


def test_no_second_pass_when_the_first_makes_what_was_asked():
    result = _run(RANDOM, SeedKind, 2)
    assert len(result.tasks) == 2 and result.attempted == 2
