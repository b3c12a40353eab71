"""τ² user simulator: the base SmolLM2 playing the user vs the same model after SFT on ideal dialogues (issue 23).

On held-out τ² airline tasks, one FIXED deterministic agent (:class:`GatedAgent`, below) talks to each user.
The agent knows the task's gold calls but makes each one only once every identifying argument value of
that call (user_id, reservation_id) has been said by the user in the dialogue or shown by one of its own
earlier calls' results; until then it asks for the missing values (asking twice at most, then it gives
up with ###STOP###).  When all gold calls are made it reports them and asks whether there is anything
else; a user who does not stop then is told goodbye (``agent_stop``).  So the reward depends on the user
alone: a user who states its business, gives the identifiers it knows when asked and stops at the end gets
1; one who never says them, or stops early, gets 0.

Users, K samples per task at temperature > 0 (the scripted one is deterministic):

* ``scripted``: the ideal dialogue's user (ace_env/tau2/users.py ScriptedTau2User), the ceiling;
* ``base``: SmolLM2-135M-Instruct (``hf:smollm2-135m``) given τ²'s user prompt (guidelines + scenario);
* ``sft``: the same model fine-tuned here on tau2_user_rows of the training tasks (``ace train user-sim``'s
  training, a small budget).

Per user: the share of faithful dialogues (ace_env.tau2.user.check_fidelity) and the flags per kind, the
termination reasons, the mean reward, and the variance of the reward across the K samples of a task,
averaged over tasks: noise the user puts into an RL reward (the AReaL-SEA finding, measured on τ²).

Split (fixed, by τ² task id): HELD_OUT below are airline tasks whose gold writes to the database (a
read-only task passes the database check whatever is said) and needs an identifier only the user can give;
the user simulator trains on the other airline tasks, in τ²'s order, the first --train-tasks of them.

Resumable: each part's result is kept in --out (JSON) and skipped when present.

    OMP_NUM_THREADS=1 ACE_TORCH_THREADS=1 python benchmarks/tau2_user_bench.py --out benchmarks/out/tau2_user.json
    ... --agent-wording paraphrase --out benchmarks/out/tau2_user.json   # the same users, the agent in other words
    python benchmarks/tau2_user_bench.py --quick    # a tiny model built offline, 1 task, K=2 (CI smoke)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import quick_option, quick_run, result_file

from ace_env.tau2.ideal import ANYTHING_ELSE, ask_text, identifiers, norm, report_text
from ace_env.tau2.orchestrate import AGENT_STOP, run_dialogue
from ace_env.tau2.tasks import Tau2Task, load_tasks
from ace_env.tau2.user import FLAG_KINDS, check_fidelity
from ace_env.tau2.users import ScriptedTau2User, Tau2LLMUser, tau2_user_rows
from train.models import resolve_model
from train.policies import load_policy
from train.policies.base import GenerationConfig
from train.sft import SFTRunConfig, train_sft_rows
from train.tau2_eval import PolicyGenerate

#: Held-out airline tasks (τ² ids): gold writes to the database, and an identifier only the user knows.
HELD_OUT = ("7", "9", "11", "20", "27", "30", "37", "40")

GIVE_UP = f"I'm sorry, I cannot go on without that information. {AGENT_STOP}"

#: ``--agent-wording paraphrase``: the agent's questions and reports in words the training template never uses
#: (the labels stay: user id, reservation id), to see whether the fine-tuned user needs the template's words.
PARAPHRASE_ASK = "Thanks for waiting. To look into this, what is your {said}?"
PARAPHRASE_CLOSE = "Your request has been taken care of. Do you need help with anything more today?"
GOODBYE = f"Thank you for calling, goodbye! {AGENT_STOP}"


class GatedAgent:
    """The benchmark's fixed agent for one task (see the module docstring); a ``run_dialogue`` agent."""

    def __init__(self, task: Tau2Task, max_asks: int = 2, wording: str = "template") -> None:
        self.task = task
        self.wording = wording
        self.gold = list(task.agent_actions)
        self.max_asks = max_asks

    def __call__(self, view: list[dict[str, Any]]) -> dict[str, Any]:
        heard = norm(" ".join(m.get("content") or "" for m in view if m["role"] == "user"))
        results = norm(" ".join(m.get("content") or "" for m in view if m["role"] == "tool"))
        issued = [m for m in view if m["role"] == "assistant" and m.get("tool_calls")]
        texts = [m.get("content") or "" for m in view if m["role"] == "assistant" and not m.get("tool_calls")]
        last_text = max((i for i, m in enumerate(view) if m["role"] == "assistant" and not m.get("tool_calls")),
                        default=0)
        pending = []  # calls made since the agent last spoke, with their results
        by_id = {m.get("tool_call_id"): m.get("content") or "" for m in view if m["role"] == "tool"}
        k = len(issued) - sum(1 for m in view[last_text:] if m["role"] == "assistant" and m.get("tool_calls"))
        for m in view[last_text:]:
            if m["role"] == "assistant" and m.get("tool_calls"):
                content = by_id.get(m["tool_calls"][0]["id"], "")
                pending.append((self.gold[k], content.startswith("Error"), content))
                k += 1
        paraphrase = self.wording == "paraphrase"
        report = f"I made {len(pending)} change(s) or lookup(s) on your account." if paraphrase and pending else \
            "" if paraphrase else report_text(pending)
        if len(issued) == len(self.gold):
            close = PARAPHRASE_CLOSE if paraphrase else ANYTHING_ELSE
            if any(close in t for t in texts):
                return {"role": "assistant", "content": GOODBYE}
            return {"role": "assistant", "content": f"{report} {close}".strip()}
        action = self.gold[len(issued)]
        missing = [p for p, v in identifiers(action) if norm(v) not in heard and norm(v) not in results]
        if not missing:
            return {"role": "assistant", "content": "", "tool_calls": [
                {"id": f"agent_{len(issued)}", "type": "function",
                 "function": {"name": action.name, "arguments": json.dumps(action.arguments)}}]}
        ask = ask_text(missing)
        if paraphrase:
            ask = PARAPHRASE_ASK.format(said=ask.removeprefix("Could you please tell me your ").removesuffix("?"))
        if sum(t.endswith(ask) for t in texts) >= self.max_asks:
            return {"role": "assistant", "content": GIVE_UP}
        return {"role": "assistant", "content": f"{report} {ask}".strip()}


def split(train_tasks: int, held: int) -> tuple[list[Tau2Task], list[Tau2Task]]:
    tasks = load_tasks("airline")
    by_id = {t.tau2_id: t for t in tasks}
    held_out = [by_id[i] for i in HELD_OUT[:held]]
    train = [t for t in tasks if t.tau2_id not in HELD_OUT][:train_tasks]
    return train, held_out


def run_user(name: str, make_user, tasks: list[Tau2Task], k: int, max_turns: int,
             wording: str = "template") -> dict[str, Any]:
    """K dialogues per task with ``make_user(task, sample)``; fidelity, terminations, rewards."""
    start = time.perf_counter()
    records = []
    for task in tasks:
        for sample in range(k):
            d = run_dialogue(task, GatedAgent(task, wording=wording), make_user(task, sample), max_turns=max_turns)
            report = check_fidelity(task, d)
            records.append({"task": task.id, "sample": sample, "termination": d.termination,
                            "reward": d.verdict(task).reward, "faithful": report.faithful, "flags": report.counts,
                            "user_messages": [m.get("content") for m in d.messages if m["role"] == "user"]})
    per_task: dict[str, list[float]] = {}
    for r in records:
        per_task.setdefault(r["task"], []).append(r["reward"])
    variances = [statistics.pvariance(v) for v in per_task.values() if len(v) > 1]
    return {
        "user": name, "dialogues": len(records), "tasks": len(per_task), "k": k,
        "faithful": round(sum(r["faithful"] for r in records) / len(records), 3) if records else None,
        "flags": {kind: sum(r["flags"][kind] for r in records) for kind in FLAG_KINDS},
        "terminations": dict(Counter(r["termination"] for r in records).most_common()),
        "mean_reward": round(statistics.fmean(r["reward"] for r in records), 3) if records else None,
        "reward_variance_across_k": round(statistics.fmean(variances), 4) if variances else None,
        "seconds": round(time.perf_counter() - start, 1), "records": records,
    }


def llm_user(spec: str, temperature: float, max_tokens: int):
    policy = load_policy(spec)

    def make(task: Tau2Task, sample: int) -> Tau2LLMUser:
        return Tau2LLMUser(PolicyGenerate(policy, GenerationConfig(temperature=temperature, max_tokens=max_tokens,
                                                                    seed=sample)), task)

    return make


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m", help="Model folder or name of the base user.")
    ap.add_argument("--train-tasks", type=int, default=24, help="Airline training tasks (not held out) for the SFT.")
    ap.add_argument("--held-out", type=int, default=len(HELD_OUT), help=f"Held-out tasks (of {len(HELD_OUT)}).")
    ap.add_argument("-k", type=int, default=3, help="Dialogues per task and user (samples).")
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--max-tokens", type=int, default=40, help="Longest user message, in tokens.")
    ap.add_argument("--max-turns", type=int, default=24, help="Messages per dialogue (run_dialogue's max_turns).")
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--learning-rate", type=float, default=1e-4)
    ap.add_argument("--agent-wording", choices=("template", "paraphrase"), default="template",
                    help="The agent's questions in the training template's words, or in other words.")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/out/tau2_user.json"))
    quick_option(ap, "2 training and 1 held-out task, K=2")
    args = ap.parse_args(argv)
    if quick_run(args, "tau2-user", "tau2_user.json"):
        args.train_tasks, args.held_out, args.k, args.max_tokens, args.max_turns = 2, 1, 2, 8, 12
    result, save = result_file(args.out, dict)
    result.setdefault("settings", {k: str(v) for k, v in vars(args).items()})

    train, held = split(args.train_tasks, args.held_out)
    result["split"] = {"held_out": [t.id for t in held], "train": [t.id for t in train]}
    base_spec = f"hf:{resolve_model(args.model)}"
    sft_dir = args.out.parent / "tau2-user-sim-model"
    if "train" not in result:
        dropped: list[str] = []
        rows = tau2_user_rows(train, dropped)
        # The loss is on every assistant (here: user) message of a row, so a dialogue's last row holds all of
        # its targets, each after exactly the view the shorter rows give it: train on that one, 1/3 the steps.
        last = {r["task_id"].partition("#")[0]: r for r in rows}
        print(f"training the user simulator on {len(rows)} user messages of {len(train)} airline tasks "
              f"({len(dropped)} dialogue(s) dropped), one row per dialogue ...", flush=True)
        rows = list(last.values())
        too_long: list[str] = []
        report = train_sft_rows(SFTRunConfig(model=str(resolve_model(args.model)), out=str(sft_dir),
                                             epochs=args.epochs, learning_rate=args.learning_rate,
                                             max_length=2048), rows, too_long)
        result["train"] = {**{k: report[k] for k in ("examples", "tokens", "first_loss", "last_loss", "seconds")},
                           "user_messages": sum(1 for r in rows for m in r["messages"] if m["role"] == "assistant"),
                           "dropped": len(dropped), "too_long": len(too_long)}
        save()
    users = (("scripted", lambda task, sample: ScriptedTau2User(task)),
             ("base", None), ("sft", None))
    for name, make in users:
        key = f"user_{name}" + ("" if args.agent_wording == "template" else f"@{args.agent_wording}")
        if key in result:
            continue
        k = 1 if name == "scripted" else args.k
        print(f"{name} user: {len(held)} held-out tasks x {k} ...", flush=True)
        if make is None:
            make = llm_user(base_spec if name == "base" else f"hf:{sft_dir}", args.temperature, args.max_tokens)
        result[key] = run_user(name, make, held, k, args.max_turns, args.agent_wording)
        save()
    suffix = "" if args.agent_wording == "template" else f"@{args.agent_wording}"
    cols = [result[f"user_{n}{suffix}"] for n, _ in users]
    tr = result["train"]
    print(f"\nτ² airline, {len(held)} held-out tasks, fixed gated agent ({args.agent_wording} wording); SFT on {tr['user_messages']} user messages "
          f"({tr['examples']} dialogues) of {len(train)} tasks ({tr['seconds']} s, loss {tr['first_loss']:.3f} -> {tr['last_loss']:.3f})")
    print(f"{'':32s}{'scripted':>12s}{'base user':>12s}{'SFT-ed user':>14s}")

    def row(label: str, values: list[Any]) -> None:
        print(f"{label:32s}" + "".join(f"{v!s:>{w}s}" for v, w in zip(values, (12, 12, 14))))

    row("dialogues (tasks x K)", [f"{c['tasks']}x{c['k']}" for c in cols])
    row("faithful dialogues (share)", [c["faithful"] for c in cols])
    for kind in FLAG_KINDS:
        row(f"  flags: {kind}", [c["flags"][kind] for c in cols])
    for reason in sorted({r for c in cols for r in c["terminations"]}):
        row(f"  ended by {reason}", [c["terminations"].get(reason, 0) for c in cols])
    row("mean reward", [c["mean_reward"] for c in cols])
    row("reward variance across K", [c["reward_variance_across_k"] if c["k"] > 1 else "-" for c in cols])
    row("seconds", [c["seconds"] for c in cols])
    fb, fs = cols[1]["faithful"], cols[2]["faithful"]
    print(f"faithful dialogues SFT/base: {fs / fb:.2f}x" if fb else
          f"faithful dialogues SFT/base: n/a (the base user has no faithful dialogue; SFT-ed {fs:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
