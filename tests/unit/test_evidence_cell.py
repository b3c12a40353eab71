"""The evidence benchmark's cheaper cell (issue 32, item 3): training that stops at the last supervised token, with
the fused AdamW, gives the loss, gradients and weights of the legacy path (the whole token window, the plain AdamW
loop) up to float rounding.  The scoring half is checked in test_goldprefix (teacher_forced_shared)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch  # the train extra is part of setup: without it these tests fail, never skip
from benchmod import load_benchmark

from ace_env.tasksets import load_task_set

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "evidence_bench.py"


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("evidence_bench.py", "evidence_bench_cell_under_test")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from train.tiny import build_tiny_model

    torch.set_num_threads(1)
    return str(build_tiny_model(tmp_path_factory.mktemp("cell") / "tiny", seed=5))


def _tail(example: dict) -> int:
    """Tokens after the last position that predicts a supervised token (what the cheaper path does not run)."""
    mask = example["assistant_masks"]
    return len(mask) - max(i for i, m in enumerate(mask) if m)


@pytest.fixture(scope="module")
def examples(bench, tiny):
    base = load_task_set("bfcl:base")
    trainer = bench.Trainer(tiny, 1e-3, 0)
    tasks = [base[f"multi_turn_base_{i}"] for i in range(6)]
    # a window that cuts a transcript inside a tool output or user turn, as 2,048 tokens cut BFCL's long ones:
    # 40 tokens into the longest unsupervised stretch that follows a supervised token
    whole = trainer.examples(tasks, 100_000)
    cut = 0
    for ex in whole:
        mask = ex["assistant_masks"]
        for i in range(1, len(mask) - 40):
            if mask[i - 1] and not any(mask[i:i + 40]):
                cut = max(cut, i + 40)
    out = trainer.examples(tasks, cut)
    return sorted(out, key=_tail, reverse=True)


def test_training_stops_at_the_last_supervised_token_with_the_same_loss_and_gradients(bench, tiny, examples):
    ex = examples[0]
    assert _tail(ex) > 30  # the case that matters: a long unsupervised tail
    grads = {}
    for legacy in (True, False):
        trainer = bench.Trainer(tiny, 1e-3, 0, legacy=legacy)
        loss = trainer.loss(ex)
        loss.backward()
        grads[legacy] = (loss.item(), {n: p.grad.clone() for n, p in trainer.model.named_parameters()})
    (loss_l, g_l), (loss_f, g_f) = grads[True], grads[False]
    assert loss_f == pytest.approx(loss_l, rel=1e-5)
    assert g_l.keys() == g_f.keys()
    for name in g_l:
        assert torch.allclose(g_f[name], g_l[name], rtol=1e-4, atol=1e-7), name
    assert any(g.abs().sum() > 0 for g in g_f.values())


def test_a_few_steps_end_at_the_same_weights(bench, tiny, examples):
    """Truncation and the fused optimizer together, over steps (Adam's state carries the gradients along)."""
    runs = {}
    for legacy in (True, False):
        trainer = bench.Trainer(tiny, 1e-3, 0, legacy=legacy)
        losses = [trainer.step(ex) for ex in examples[:4]]
        runs[legacy] = (losses, {n: p.detach().clone() for n, p in trainer.model.named_parameters()})
    (losses_l, w_l), (losses_f, w_f) = runs[True], runs[False]
    assert losses_f == pytest.approx(losses_l, rel=1e-5)
    assert losses_l[-1] != losses_l[0]
    moved = 0
    start = bench.Trainer(tiny, 1e-3, 0, legacy=True).model.state_dict()
    for name in w_l:
        assert torch.allclose(w_f[name], w_l[name], rtol=1e-5, atol=1e-6), name
        moved += not torch.equal(w_l[name], start[name])
    assert moved > 0


def test_the_cell_cost_script_runs_both_paths_and_finds_the_same_measurement(tmp_path):
    """benchmarks/evidence_cell_cost.py --quick (a tiny model): both cells run, the table has the cell's ratio, and
    every held-out step's exact match is the same on both paths."""
    import os
    import re
    import subprocess

    script = BENCH.parent / "evidence_cell_cost.py"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ACE_TORCH_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(script), "--quick", "--sequential", "--work", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(r"(?m)^cell \(train \+ score \+ save\) +\d+\.\d +\d+\.\d +\d+\.\d\dx", proc.stdout), proc.stdout
    same = re.search(r"same exact match (\d+)/(\d+)", proc.stdout)
    assert same and same.group(1) == same.group(2) == "238", proc.stdout
    fewer = re.search(r"scoring ([\d,]+) vs ([\d,]+)", proc.stdout)
    assert int(fewer.group(2).replace(",", "")) < int(fewer.group(1).replace(",", ""))
