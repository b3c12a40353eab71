"""User-simulator fidelity: the base model playing the user vs the same model after `ace train user-sim`.

For every held-out task and turn, the simulator sees its view of the oracle
conversation so far and writes the user's next message; the deterministic
checker (train/users.py) flags leaked facts, omitted facts, invented values,
tool calls and role breaks.  Then the reward variance the user causes: the same
agent (greedy) on the same tasks, driven by the simulated user at several
seeds; the spread of the agent's reward across user seeds is noise that RL
would blame on the agent.

Resumable: each part's result is kept in --out (JSON) and skipped when present.

    python benchmarks/user_sim_bench.py --train-tasks 20 --held-out 8 --seeds 3 --out benchmarks/out/user_sim.json
    python benchmarks/user_sim_bench.py --quick    # a tiny model built offline, 2+2 tasks, a temporary --out (CI smoke)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_facts, quick_option, quick_run, result_file  # noqa: E402

from ace_env import bfcl  # noqa: E402
from ace_env.verifier import verify  # noqa: E402
from train.engine import RolloutConfig, RolloutEngine  # noqa: E402
from train.errors import ExportError  # noqa: E402
from train.export import to_openai_sft  # noqa: E402
from train.models import resolve_model  # noqa: E402
from train.policies import load_policy  # noqa: E402
from train.policies.base import GenerationConfig  # noqa: E402
from train.sft import SFTRunConfig, train_sft_rows  # noqa: E402
from train.users import LLMUser, fidelity, user_sim_rows  # noqa: E402


def transcripts(tasks):
    out = {}
    for t in tasks:
        try:
            out[t.id] = to_openai_sft(t)["messages"]
        except ExportError:
            pass
    return out


def measure_fidelity(spec: str, tasks, convs, gen: GenerationConfig) -> dict:
    user = LLMUser(load_policy(spec), gen)
    start = time.perf_counter()
    for task in tasks:
        messages = convs.get(task.id)
        if not messages:
            continue
        user_at = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        for turn, i in enumerate(user_at[: len(task.turns)]):
            user.write(task, turn, messages[:i])
    f = fidelity(user.checked)
    return {"policy": spec, "turns": f.turns, "clean": f.clean, "fidelity": round(f.rate, 3), "by_kind": f.by_kind,
            "seconds": round(time.perf_counter() - start, 1)}


def reward_spread(agent_spec: str, user_spec: str, tasks, seeds: int, max_tokens: int) -> dict:
    agent = load_policy(agent_spec)
    per_task = {}
    for seed in range(seeds):
        user = LLMUser(load_policy(user_spec), GenerationConfig(temperature=0.7, max_tokens=96, seed=seed))
        engine = RolloutEngine(agent, RolloutConfig(step_cap=2, generation=GenerationConfig(max_tokens=max_tokens)),
                               user=user)
        for row in engine.run(tasks):
            task = next(t for t in tasks if t.id == row["task_id"])
            v = verify(task, row["turns"])
            per_task.setdefault(task.id, []).append(v.partial_credit)
    spreads = [statistics.pvariance(v) for v in per_task.values() if len(v) > 1]
    return {"agent": agent_spec, "user": user_spec, "seeds": seeds, "tasks": len(per_task),
            "mean_variance_of_partial_credit_across_user_seeds": round(statistics.fmean(spreads), 4) if spreads else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m", help="Model folder or name of the base user simulator.")
    ap.add_argument("--train-tasks", type=int, default=20, help="BFCL base tasks the user simulator is trained on.")
    ap.add_argument("--held-out", type=int, default=8, help="Held-out tasks (base tasks 0..N-1) for fidelity.")
    ap.add_argument("--seeds", type=int, default=3, help="User seeds for the reward spread.")
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--max-tokens", type=int, default=64, help="Longest agent answer in the reward-spread part.")
    ap.add_argument("--agent", default=None,
                    help="Agent of the reward-spread part (default: the base model). An agent that never "
                         "scores (zero-shot SmolLM2 makes no call) has no spread for any user to cause.")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/out/user_sim.json"))
    quick_option(ap, "2 training and 2 held-out tasks, 2 seeds")
    args = ap.parse_args(argv)
    if quick_run(args, "user-sim", "user_sim.json"):
        args.agent = None
        args.train_tasks, args.held_out, args.seeds, args.max_tokens = 2, 2, 2, 8
    result, save = result_file(args.out, lambda: {"machine": machine_facts()})

    base = bfcl.load_tasks("base")
    held, train = base[: args.held_out], base[args.held_out: args.held_out + args.train_tasks]
    base_spec = f"hf:{resolve_model(args.model)}"
    sft_dir = args.out.parent / "user-sim-model"
    gen = GenerationConfig(temperature=0.0, max_tokens=96)
    held_convs = transcripts(held)
    if "train" not in result:
        print(f"training the user simulator on {len(train)} tasks ...", flush=True)
        report = train_sft_rows(SFTRunConfig(model=str(resolve_model(args.model)), out=str(sft_dir), epochs=args.epochs),
                                user_sim_rows(train, transcripts(train)))
        result["train"] = {k: report[k] for k in ("examples", "tokens", "first_loss", "last_loss", "seconds")}
        save()
    for name, spec in (("base", base_spec), ("sft", f"hf:{sft_dir}")):
        key = f"fidelity_{name}"
        if key not in result:
            print(f"fidelity of the {name} user on {len(held)} held-out tasks ...", flush=True)
            result[key] = measure_fidelity(spec, held, held_convs, gen)
            save()
    agent = f"hf:{args.agent}" if args.agent else base_spec
    suffix = "" if agent == base_spec else f"@{agent}"
    for name, spec in (("base", base_spec), ("sft", f"hf:{sft_dir}")):
        key = f"reward_spread_{name}{suffix}"
        if key not in result:
            print(f"reward spread with the {name} user ({args.seeds} seeds, agent {agent}) ...", flush=True)
            result[key] = reward_spread(agent, spec, held[:4], args.seeds, args.max_tokens)
            save()
    fb, fs = result["fidelity_base"], result["fidelity_sft"]
    print(f"\n{'':28s}{'base user':>12s}{'SFT-ed user':>14s}")
    print(f"{'fidelity (clean turns)':28s}{fb['fidelity']:>12.3f}{fs['fidelity']:>14.3f}")
    for kind in fb["by_kind"]:
        print(f"{'  ' + kind:28s}{fb['by_kind'][kind]:>12d}{fs['by_kind'][kind]:>14d}")
    rb = result[f"reward_spread_base{suffix}"]["mean_variance_of_partial_credit_across_user_seeds"]
    rs = result[f"reward_spread_sft{suffix}"]["mean_variance_of_partial_credit_across_user_seeds"]
    print(f"{'reward variance from user':28s}{rb!s:>12s}{rs!s:>14s}   (agent {agent})")
    print(f"fidelity ratio SFT/base: {fs['fidelity'] / fb['fidelity']:.2f}x" if fb["fidelity"] else
          f"fidelity ratio SFT/base: n/a (the base user has no clean turn; SFT-ed {fs['fidelity']:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
