"""Output views: the executor shows a tool's result re-formatted; state and arguments stay canonical."""

from __future__ import annotations

import copy
import json

import pytest

from ace_env import bfcl
from ace_env.errors import AceError
from ace_env.executor import RolloutState
from ace_env.oracle import replay_oracle
from ace_env.tasks import Task
from ace_env.verifier import ground_truth_rollout, verify
from ace_env.views import apply_ops, check_views
from synth.checks.parts import adjacent_positions, flat_calls

OUT = {"symbol": "AAPL", "price": 227.16, "orders": [1, 2, 3], "date": "2024-03-05", "id": 12446}


@pytest.mark.parametrize("op, expected", [
    ({"op": "rename", "map": {"price": "quote"}}, {**{k: v for k, v in OUT.items() if k != "price"}, "quote": 227.16}),
    ({"op": "wrap", "key": "data"}, {"data": OUT}),
    ({"op": "number_format", "keys": ["price"], "format": "${:,.2f}"}, {**OUT, "price": "$227.16"}),
    ({"op": "scale", "keys": ["price"], "factor": 100, "suffix": "_cents"}, None),
    ({"op": "to_string", "keys": ["id"]}, {**OUT, "id": "12446"}),
    ({"op": "prefix", "keys": ["id"], "text": "#"}, {**OUT, "id": "#12446"}),
    ({"op": "date_format", "keys": ["date"], "format": "%B %d, %Y"}, {**OUT, "date": "March 05, 2024"}),
    ({"op": "listify", "keys": ["symbol"]}, {**OUT, "symbol": ["AAPL"]}),
    ({"op": "truncate", "keys": ["orders"], "keep": 1}, {**OUT, "orders": [1]}),
    ({"op": "mask", "keys": ["symbol"], "keep": 2}, {**OUT, "symbol": "AA…"}),
    ({"op": "perturb", "keys": ["price"], "factor": 1.1}, {**OUT, "price": 249.88}),
    ({"op": "add", "fields": {"status": "stale"}}, {**OUT, "status": "stale"}),
])
def test_ops(op, expected):
    before = copy.deepcopy(OUT)
    got = apply_ops(OUT, [check_views([{"tool": "t", "ops": [op]}])[0]["ops"][0]])
    assert OUT == before  # the input is never modified
    if op["op"] == "scale":
        assert got["price_cents"] == 22716 and "price" not in got
    else:
        assert got == expected


def test_bad_views_are_one_line_errors():
    with pytest.raises(AceError, match="unknown op"):
        check_views([{"tool": "ls", "ops": [{"op": "explode"}]}])
    with pytest.raises(AceError, match="must be a list"):
        check_views({"tool": "ls"})


def _stock_task():
    seed = next(t for t in bfcl.load_tasks("base") if adjacent_positions(t, ("get_stock_info", "place_order")))
    return seed


def test_executor_applies_the_view_and_the_oracle_reapplies_it():
    seed = _stock_task()
    d = seed.to_dict()
    d["id"], d["source"] = "v1", "ace"
    d["output_views"] = [{"tool": "get_stock_info", "ops": [{"op": "rename", "map": {"price": "quote"}},
                                                             {"op": "wrap", "key": "data"}]}]
    task = Task.from_dict(json.loads(json.dumps(d)))
    plain, viewed = replay_oracle(seed), replay_oracle(task)
    k = adjacent_positions(seed, ("get_stock_info", "place_order"))[0]
    old = [s for t in plain.turns for s in t.steps]
    new = [s for t in viewed.turns for s in t.steps]
    assert json.loads(new[k].output) == {"data": {("quote" if key == "price" else key): v
                                                  for key, v in json.loads(old[k].output).items()}}
    # state and the other calls' outputs are untouched
    assert [s.arguments for s in new] == [s.arguments for s in old]
    assert [t.fingerprint for t in viewed.turns] == [t.fingerprint for t in plain.turns]
    assert verify(task, ground_truth_rollout(task)).reward == 1.0
    # an environment shows the same (the view is the task's, not the oracle's)
    env = RolloutState(task)
    t, _, raw, _ = flat_calls(task)[0]
    assert env.call(raw, t).output == new[0].output


def test_occurrence_views_survive_checkpoints_and_fast_forward():
    seed = _stock_task()
    flat = flat_calls(seed)
    k = adjacent_positions(seed, ("get_stock_info", "place_order"))[0]
    d = seed.to_dict()
    d["id"], d["source"] = "v2", "ace"
    d["output_views"] = [{"tool": "get_stock_info", "calls": [0], "ops": [{"op": "add", "fields": {"stale": True}}]}]
    t, i, raw, _ = flat[k]
    d["turns"][t]["ground_truth"].insert(i + 1, raw)  # ask again: the second answer is complete
    task = Task.from_dict(d)
    steps = [s for tt in replay_oracle(task).turns for s in tt.steps]
    assert '"stale": true' in steps[k].output and '"stale"' not in steps[k + 1].output
    gt = ground_truth_rollout(task)
    # later turns deviate after the restore from a checkpoint: counts must come back with it
    for fast in (True, False):
        assert verify(task, gt, fast_forward=fast).reward == 1.0
        skipped = copy.deepcopy(gt)
        del skipped[t][i + 1]
        v = verify(task, skipped, fast_forward=fast)
        assert v.reward == 0.0 and v.failing_turn == t
    env = RolloutState(task)
    for tt in range(t):
        for c in task.turns[tt].ground_truth:
            env.call(c, tt)
    for c in task.turns[t].ground_truth[: i + 1]:
        env.call(c, t)
    restored = RolloutState(task, env.checkpoint())
    assert '"stale"' not in restored.call(raw, t).output
