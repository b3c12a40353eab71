"""``ace eval`` writes a real policy's scores back to the graph, one scope per checkpoint."""

from __future__ import annotations

import json

import pytest
import torch  # noqa: E402  (the train extra is part of setup: without it these tests fail, never skip)

from ace.cli import main
from ace_graph.store import GraphStore


@pytest.fixture(scope="module")
def two_checkpoints(tmp_path_factory):
    from train.tiny import build_tiny_model

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("ckpts")
    return build_tiny_model(root / "step-1", seed=1), build_tiny_model(root / "step-2", seed=2)


def test_two_checkpoints_of_a_tiny_model_each_have_their_own_history(clean_db, neo4j_database, two_checkpoints,
                                                                    tmp_path, capsys):
    first, second = two_checkpoints
    for ckpt, path, limit in (("step-1", first, 2), ("step-2", second, 3)):
        out = tmp_path / f"{ckpt}.jsonl"
        code = main(["eval", "-p", f"hf:{path}", "--tasks", "bfcl:base", "-e", "evaltest", "-c", ckpt,
                     "--name", "tiny", "--limit", str(limit), "--max-tokens", "8", "--step-cap", "2",
                     "--out", str(out), "--json"])
        assert code == 0
        result = json.loads(capsys.readouterr().out)
        assert result["scope"] == f"evaltest/tiny/{ckpt}"
        assert result["rollouts"] == limit and len(out.read_text().splitlines()) == limit
        assert result["skills"] and result["tools"]
    store = GraphStore(clean_db, neo4j_database)
    history = store.run("capability-history", experiment="evaltest", policy="tiny", level="skill")
    by_ckpt: dict[str, dict[str, int]] = {}
    for row in history:
        by_ckpt.setdefault(row["checkpoint"], {})[row["key"]] = row["attempts"]
    assert set(by_ckpt) == {"step-1", "step-2"}
    assert [r["round"] for r in history if r["checkpoint"] == "step-2"][0] == 2
    for ckpt in by_ckpt:
        profile = store.run("capability-profile", scope=f"evaltest/tiny/{ckpt}", level="skill")
        assert by_ckpt[ckpt] == {r["key"]: r["attempts"] for r in profile}
    # three tasks reach at least as many skills as the first two: the counts are each checkpoint's own
    assert sum(by_ckpt["step-2"].values()) >= sum(by_ckpt["step-1"].values())
    assert by_ckpt["step-1"] != by_ckpt["step-2"]
    scopes = {s["checkpoint"]: s["rollouts"] for s in store.run("scopes", experiment="evaltest")}
    assert scopes == {"step-1": 2, "step-2": 3}
