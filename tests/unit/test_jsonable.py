"""One helper turns report dataclasses into JSON (``ace_env.jsonable``, issue 33 item 4); what the reports
converted to it write is byte for byte what their hand-written ``to_dict`` wrote."""

from __future__ import annotations

import doctest
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import ace_env.jsonable
from ace.stages import RoundReport, SimReport
from ace_env.jsonable import jsonable, to_json
from ace_env.tau2.tasks import GoldAction, Tau2Task
from ace_graph.server import ServerStatus
from synth.planner import Plan, PlanStats
from train.curriculum.core import CurriculumConfig, CurriculumState, Decision, UnitState
from train.goldprefix import StepScore
from train.judge import AssertionVerdict


def test_the_module_example_runs():
    assert doctest.testmod(ace_env.jsonable).failed == 0


@dataclass
class _Inner:
    n: int = 1

    def to_dict(self):
        return {"own": self.n}


@dataclass
class _Plain:
    x: float = 0.5


@dataclass
class _Outer:
    name: str
    inner: _Inner
    plain: _Plain
    path: Path
    tags: frozenset = frozenset()
    pair: tuple = ()
    seconds: float = field(default=0.0, metadata={"round": 3})
    hidden: list = field(default_factory=list, metadata={"json": False})
    old: int = field(default=0, metadata={"json_key": "renamed"})


def test_fields_in_order_nested_reports_through_their_own_to_dict():
    got = jsonable(_Outer("a", _Inner(2), _Plain(), Path("/x/y"), frozenset({"b", "a"}), (1, (2, 3)), 1.23456,
                          [1], 7), extra={"count": 3})
    assert json.dumps(got) == ('{"name": "a", "inner": {"own": 2}, "plain": {"x": 0.5}, "path": "/x/y", '
                               '"tags": ["a", "b"], "pair": [1, [2, 3]], "seconds": 1.235, "renamed": 7, "count": 3}')
    assert jsonable(_Outer("a", _Inner(), _Plain(), Path("p")), exclude=("inner", "plain", "path"))["name"] == "a"
    assert "inner" not in jsonable(_Outer("a", _Inner(), _Plain(), Path("p")), exclude=("inner",))
    assert to_json(_Plain(), indent=1) == '{\n "x": 0.5\n}'


def _round() -> RoundReport:
    decisions = [Decision(1, "a>b", "composition", "locked", "active", "prerequisites ≥ θ"),
                 Decision(1, "a", "skill", "active", "active", "")]
    return RoundReport("exp", 1, "exp/p/c", decisions, CurriculumState(), {"active": 2, "mastered": 0, "locked": 0})


#: What the hand-written to_dicts of ace/stages.py wrote (json.dumps), before they became jsonable.
SIM_JSON = ('{"out": "runs/x.jsonl", "rollouts": 12, "tasks": 3, "seed": 7, "with_slips": 2, '
            '"slips": {"argument": 1, "skip": 1}, "reused": false}')
ROUND_JSON = ('{"experiment": "exp", "round": 1, "scope": "exp/p/c", "states": {"active": 2, "mastered": 0, '
              '"locked": 0}, "changes": {"active\\u2192active": 1, "locked\\u2192active": 1}')
DECISIONS_JSON = (', "decisions": [{"round": 1, "unit": "a>b", "kind": "composition", "from": "locked", "to": '
                  '"active", "reason": "prerequisites \\u2265 \\u03b8"}, {"round": 1, "unit": "a", "kind": "skill", '
                  '"from": "active", "to": "active", "reason": ""}]}')


def test_the_stage_reports_write_what_they_wrote():
    assert json.dumps(SimReport("runs/x.jsonl", 12, 3, 7, 2, {"argument": 1, "skip": 1}).to_dict()) == SIM_JSON
    assert json.dumps(_round().to_dict()) == ROUND_JSON + DECISIONS_JSON
    assert json.dumps(_round().to_dict(decisions=False)) == ROUND_JSON + "}"


#: Reports in other owners' files whose hand-written to_dict is the helper's output already: each can become
#: ``return jsonable(self)`` without a byte of its JSON changing.
SAME_AS_HELPER = [
    ServerStatus(True, 12, "bolt://127.0.0.1:7687", "http://127.0.0.1:7474", "5.26.0", "up", False, "/p"),
    AssertionVerdict("the agent refunded", "yes", "Yes."),
    StepScore("t1", 3, 1, 0, "cd", None, 12, 0.5, True, None, None, "argument", "ok"),
    UnitState("a>b", "composition", "active", 0.25, 2, "why"),
    CurriculumConfig(),
    Plan("p1", 0, ("a", "b"), "lookalike", 0.5, 2, ("fs",), "terse", ["s1"], {"n": 1}, "active",
         PlanStats(3, 2, 1, 4, 1, 1, {"dup": 1}, {"argument": 2}), ["r0"]),
    Tau2Task("tau2:airline:1", "airline", "1", "scenario",
             (GoldAction("book", {"id": 1}), GoldAction("cancel", {}, "user", ("id",))),
             ("DB",), ("say hi",), ("polite",), 1, ({"name": "book"},), ()),
]


@pytest.mark.parametrize("report", SAME_AS_HELPER, ids=lambda r: type(r).__name__)
def test_these_hand_written_to_dicts_are_the_helpers_output(report):
    assert to_json(report, ensure_ascii=False) == json.dumps(report.to_dict(), ensure_ascii=False)
