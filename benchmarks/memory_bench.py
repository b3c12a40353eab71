"""Peak resident memory of one GRPO step and one SFT step, beside the weights-plus-optimizer floor.

    flock /tmp/ace-bench.lock .venv/bin/python benchmarks/memory_bench.py            # SmolLM2-135M
    .venv/bin/python benchmarks/memory_bench.py --quick                              # tiny model, 2 cases (CI smoke)
    flock /tmp/ace-bench.lock .venv/bin/python benchmarks/memory_bench.py --command -- \\
        ace train grpo --policy hf:smollm2-135m --tasks bfcl:base --limit 2 --steps 1 \\
        --prompts-per-step 2 --generations 4 --out /tmp/grpo-default --force

Every case runs in a fresh Python process; its peak RSS is the kernel's
``ru_maxrss`` of that process, read with ``os.wait4`` (the largest of the
process and the children it waited for, not their sum).  The floor is what any
fp32 AdamW step must hold: parameters x 4 bytes x 4 (weights, gradients, two
moments) plus the baseline, a process that imports the same libraries and does
nothing (measured the same way).

Cases (one optimizer step each; ``--cases`` picks some):

- ``grpo-default``: ``ace train grpo``'s defaults (2 prompts x 4 generations,
  micro-batch 1, gradient checkpointing) on BFCL base tasks.  The episodes come from
  the simulated agent (``sim:``, error rate 0.3), which plays whole oracle
  conversations: tool calls, real tool outputs, every turn (longer than what an
  untrained SmolLM2 writes), so only the training side is measured here; the
  policy's own generation is measured by ``--command`` on the README's command.
  Dynamic filtering is off so that the step trains on exactly B x G episodes.
- ``grpo-8x8``: the same with 8 prompts x 8 generations (64 episodes).
- ``sft-default``: ``ace train sft``'s defaults (batch 1, max length 1024) on one
  oracle transcript.
- ``sft-8x8``: one step of a batch of 64 transcripts (micro-batch 1).

``--command -- ARGS``: runs ``ARGS`` (an ``ace`` command) the same way and
reports its wall time and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "grpo-default": {"kind": "grpo", "prompts": 2, "generations": 4},
    "grpo-8x8": {"kind": "grpo", "prompts": 8, "generations": 8},
    "sft-default": {"kind": "sft", "batch": 1},
    "sft-8x8": {"kind": "sft", "batch": 64},
}


def measure(argv: list[str], env: dict[str, str] | None = None) -> dict:
    """Run ``argv``; its exit code, wall seconds, peak RSS in MiB, and the last JSON line it printed."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env, cwd=str(ROOT), text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    report = {}
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            try:
                report = json.loads(line)
            except ValueError:
                continue
            break
    return {"rc": proc.returncode, "seconds": round(seconds, 1), "peak_mib": round(usage.ru_maxrss / 1024, 1),
            "report": report}


# ------------------------------------------------------------------------- child processes


def _child_baseline(model: str) -> dict:
    import torch
    import transformers  # noqa: F401
    import trl  # noqa: F401
    from transformers import AutoConfig, AutoModelForCausalLM

    import train.grpo  # noqa: F401
    import train.sft  # noqa: F401
    from train.policies.hf import set_torch_threads

    set_torch_threads()
    with torch.device("meta"):  # counts the parameters without allocating them
        net = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model))
    return {"params": sum(p.numel() for p in net.parameters())}


def _child_grpo(model: str, prompts: int, generations: int, work: str) -> dict:
    from ace_env import bfcl
    from ace_env.sim import parse_weakness
    from train import grpo
    from train.grpo import rollout as grpo_rollout
    from train.policies.sim import SimPolicy

    lengths: list[int] = []
    check = grpo_rollout.check_sequence_length

    def recording(task_id: str, n_tokens: int, limit: int) -> None:
        lengths.append(n_tokens)
        check(task_id, n_tokens, limit)

    grpo_rollout.check_sequence_length = recording  # where ACERollout looks it up
    weakness = parse_weakness({"defaults": {"error": 0.3}})
    tasks = {t.id: t for t in bfcl.load_tasks("base")[:prompts]}
    config = grpo.GRPORunConfig(steps=1, prompts_per_step=prompts, generations=generations, dynamic_filtering=False)
    start = time.perf_counter()
    lines = grpo.train_grpo(Path(model), tasks, Path(work) / "grpo", config,
                            policy_factory=lambda trainer: SimPolicy("sim:bench", weakness))
    return {"episodes": len(lengths), "tokens_max": max(lengths), "tokens_mean": round(sum(lengths) / len(lengths)),
            "seconds_step": round(time.perf_counter() - start, 1), "loss": lines[-1]["loss"] if lines else None}


def _child_sft(model: str, batch: int, work: str) -> dict:
    from transformers import AutoTokenizer

    from ace_env import bfcl
    from train.policies.template import ACE_CHAT_TEMPLATE, has_tool_support
    from train.sft import SFTRunConfig, oracle_transcripts, tokenize, train_sft_rows

    config = SFTRunConfig(model=model, out=str(Path(work) / "sft"), epochs=1.0, batch_size=batch)
    tokenizer = AutoTokenizer.from_pretrained(model)
    template = tokenizer.chat_template if has_tool_support(tokenizer.chat_template) else ACE_CHAT_TEMPLATE
    rows, picked = oracle_transcripts(bfcl.load_tasks("base"))[0], []
    for row in rows:  # the first `batch` transcripts with loss tokens within max_length: exactly one step
        if tokenize(tokenizer, template, [row], config.max_length, config.compact_tools, skipped=[]):
            picked.append(row)
        if len(picked) == batch:
            break
    report = train_sft_rows(config, picked, [])
    return {"examples": report["examples"], "steps": report["steps"], "tokens": report["tokens"],
            "seconds_step": report["seconds"], "loss": report["train_loss"]}


def child(args: argparse.Namespace) -> None:
    spec = {"kind": "baseline"} if args.child == "baseline" else CASES[args.child]
    with tempfile.TemporaryDirectory(prefix="ace-mem-") as work:
        if spec["kind"] == "baseline":
            out = _child_baseline(args.model)
        elif spec["kind"] == "grpo":
            out = _child_grpo(args.model, spec["prompts"], spec["generations"], work)
        else:
            out = _child_sft(args.model, spec["batch"], work)
    print(json.dumps({"case": args.child, **out}), flush=True)


# ------------------------------------------------------------------------- parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="A tiny model built offline (CI smoke); by default the cases grpo-default,sft-default.")
    parser.add_argument("--model", default="", help="Model folder (default: SmolLM2-135M, or the tiny model).")
    parser.add_argument("--cases", default=None,
                        help=f"Comma-separated, of {', '.join(CASES)} (default: all; with --quick one of each kind).")
    parser.add_argument("--json", action="store_true", help="Print the results as one JSON object.")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--command", action="store_true", help="Measure the ace command given after -- instead.")
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if args.command and not command:
        parser.error("--command needs the command after --, e.g. --command -- ace train grpo ...")
    args.command = command if args.command else None
    if args.child:
        child(args)
        return 0
    env = dict(os.environ)
    env.setdefault("ACE_TORCH_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    if args.command:
        argv = list(args.command)
        if argv and argv[0] == "ace":
            argv = [sys.executable, "-m", "ace.cli", *argv[1:]]
        result = measure(argv, env)
        print(json.dumps({"command": " ".join(args.command), **result}) if args.json else
              f"rc {result['rc']}, wall {result['seconds']} s, peak RSS {result['peak_mib']:.0f} MiB: "
              f"{' '.join(args.command)}")
        return result["rc"]
    if args.cases is None:
        args.cases = "grpo-default,sft-default" if args.quick else ",".join(CASES)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {', '.join(CASES)}")
    with tempfile.TemporaryDirectory(prefix="ace-mem-model-") as tmp:
        model = args.model
        if not model and args.quick:
            from train.tiny import build_tiny_model

            model = str(build_tiny_model(Path(tmp) / "tiny", hidden=64, layers=2))
        elif not model:
            from train.models import resolve_model

            model = str(resolve_model("smollm2-135m"))
        me = [sys.executable, str(Path(__file__).resolve()), "--model", model]
        base = measure([*me, "--child", "baseline"], env)
        if base["rc"] != 0:
            print(f"baseline process failed (rc {base['rc']})", file=sys.stderr)
            return 1
        params = base["report"]["params"]
        floor_mib = base["peak_mib"] + params * 16 / 2**20
        rows = []
        for case in cases:
            print(f"memory_bench: {case} ...", file=sys.stderr, flush=True)
            r = measure([*me, "--child", case], env)
            rows.append({"case": case, **r, "ratio": round(r["peak_mib"] / floor_mib, 2)})
    result = {"model": model, "params": params, "baseline_mib": base["peak_mib"], "floor_mib": round(floor_mib, 1),
              "cases": rows}
    if args.json:
        print(json.dumps(result))
        return 0 if all(r["rc"] == 0 for r in rows) else 1
    print(f"model {model}: {params:,} parameters; baseline (imports only) {base['peak_mib']:.0f} MiB; "
          f"floor = baseline + params x 16 B = {floor_mib:.0f} MiB")
    print(f"{'case':<14} {'rc':>3} {'peak MiB':>9} {'x floor':>8} {'wall s':>7}  details")
    for r in rows:
        details = {k: v for k, v in r["report"].items() if k != "case"}
        outcome = "OOM-killed" if r["rc"] in (-9, 137) else ""
        print(f"{r['case']:<14} {r['rc']:>3} {r['peak_mib']:>9.0f} {r['ratio']:>8.2f} {r['seconds']:>7.1f}  "
              f"{outcome}{json.dumps(details)}")
    return 0 if all(r["rc"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
