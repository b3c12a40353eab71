"""A toy third environment, in the tests only: a key-value store an agent writes and reads with three tools.

It is registered as BFCL and τ²-bench are (a :class:`~ace_env.environments.ToolEnvironment` entry in
:data:`~ace_env.environments.ENVIRONMENTS`, see :func:`register`), and the commands reach it through that
entry alone: ``ace env replay toy``, ``ace sim rollouts --tasks toy``, ``ace verify --tasks toy``, ``ace ingest
--tasks toy`` and the graph's queries on what it stored.  Everything it needs is in this module: its tasks, its
gold replay, its simulated agent, its verifier (:class:`ToyVerifier`), its step reader for the skill graph's
tagger (:func:`steps`), its tools' base skills (:data:`SKILLS`), its part of gold-prefix scoring
(:data:`GOLD_PREFIX`: a task's gold transcript and the judging of an answer at a step, for ``ace eval
--tasks toy --gold-prefix``), its simulated agent's answer at one such step (:func:`gold_prefix_step`) and
its exports (``ace export --tasks toy``: its own task file, :func:`write_tasks`, ``openai-sft`` rows of its gold transcripts and ``trl``
rows of its prompts, :func:`trl_row`) and what the rollout engine plays of its tasks (:data:`TURNS`: the prompt
as the one user turn, its tools, one rollout's store as :class:`ToyState`, for ``ace eval --tasks toy`` of a
policy rolled out freely) and its task files' reader (:func:`load_task_file`: the tasks ``ace synth --out`` wrote,
for ``ace synth check``); see docs/environments.md for what an environment implements.
"""

from __future__ import annotations

import hashlib
import json
import random
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ace_env import executor
from ace_env.bounded import LineError
from ace_env.calls import Call, parse_call
from ace_env.environments import ENVIRONMENTS, ExportRows, ToolEnvironment
from ace_env.errors import ConfigError, TaskLoadError
from ace_env.goldprefix import DONE_MESSAGE, SYSTEM_PROMPT, GoldPrefix, GoldTranscript, Judge, StepVerdict, sft_row
from ace_env.goldprefix import GoldStep as PrefixStep
from ace_env.modelout import is_malformed, parse_message
from ace_env.sim import MALFORMED, WRONG_TOOL, WeaknessSpec, load_weakness, simulate, slip_chance
from ace_env.steps import GoldStep, GoldSteps
from ace_env.taskfile import TaskFile, task_file_lines
from ace_env.taskturns import TaskTurns
from ace_env.verifier import MALFORMED_CALL, STATE_DIVERGED, STOPPED_EARLY, WRONG_ARGUMENT, Verdict
from ace_env.verifier import WRONG_TOOL as WRONG_TOOL_ATTRIBUTION
from ace_env.worker import Budget

NAME = "toy"

#: The tools and their descriptions: ``put(key, value)``, ``get(key)``, ``incr(key)`` (a missing key is 0).
TOOLS = {"put": "Store value under key.", "get": "The value under key.", "incr": "Add one to the number under key."}

#: Its tools' OpenAI schemas (what a policy is offered under the gold prefix).
SCHEMAS = [{"type": "function", "function": {
    "name": name, "description": doc, "parameters": {
        "type": "object", "required": ["key", "value"] if name == "put" else ["key"],
        "properties": {"key": {"type": "string"}, **({"value": {}} if name == "put" else {})}}}}
    for name, doc in TOOLS.items()]

#: Its tools' base skills (skill ids of ace_graph/skills.toml, whose [tools] does not name them).
SKILLS = {"put": ("create_state",), "get": ("query_lookup",), "incr": ("modify_state", "arithmetic")}


@dataclass(frozen=True)
class ToyTask:
    """A task: what the user asks, the gold calls (tool, arguments) and the store they must leave."""

    id: str
    group: str
    prompt: str
    gold: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]
    expected: tuple[tuple[str, Any], ...]
    source: str = NAME

    # what the graph's Task nodes record of any task
    @property
    def category(self) -> str:
        return self.group

    @property
    def n_turns(self) -> int:
        return 1

    @property
    def n_steps(self) -> int:
        return len(self.gold)

    @property
    def provenance(self) -> dict[str, Any]:
        return {}

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps([self.id, self.prompt, self.gold, self.expected]).encode()).hexdigest()[:16]


def _task(tid: str, group: str, prompt: str, calls: list[tuple[str, dict[str, Any]]],
          expected: dict[str, Any]) -> ToyTask:
    return ToyTask(f"{NAME}:{tid}", group, prompt, tuple((t, tuple(sorted(a.items()))) for t, a in calls),
                   tuple(sorted(expected.items())))


TASKS = (
    _task("put_get", "store", "Store 1 under a, then read a back.",
          [("put", {"key": "a", "value": 1}), ("get", {"key": "a"})], {"a": 1}),
    _task("two_keys", "store", "Store 2 under a and 3 under b.",
          [("put", {"key": "a", "value": 2}), ("put", {"key": "b", "value": 3})], {"a": 2, "b": 3}),
    _task("count_twice", "counter", "Count n up twice.", [("incr", {"key": "n"}), ("incr", {"key": "n"})], {"n": 2}),
    _task("put_then_incr", "counter", "Set n to 5, add one, and read n.",
          [("put", {"key": "n", "value": 5}), ("incr", {"key": "n"}), ("get", {"key": "n"})], {"n": 6}),
)


def call(store: dict[str, Any], tool: str, args: Mapping[str, Any]) -> tuple[str, bool]:
    """Run one call on ``store`` (changed in place): its output as JSON text, and whether it errored."""
    if tool == "put" and set(args) == {"key", "value"}:
        store[args["key"]] = args["value"]
    elif tool == "incr" and set(args) == {"key"} and isinstance(store.get(args["key"], 0), int):
        store[args["key"]] = store.get(args["key"], 0) + 1
    elif tool != "get" or set(args) != {"key"}:
        return f"{tool}({', '.join(map(str, args))}) is not a toy tool call", True
    elif args["key"] not in store:
        return f"no key {args['key']!r}", True
    return json.dumps({"key": args["key"], "value": store[args["key"]]}), False


def run(calls: Sequence[tuple[str, Mapping[str, Any]]]) -> tuple[dict[str, Any], list[str]]:
    """The store the calls leave, and one line per call that failed."""
    store: dict[str, Any] = {}
    errors = []
    for i, (tool, args) in enumerate(calls):
        output, failed = call(store, tool, args)
        if failed:
            errors.append(f"call {i}: {output}")
    return store, errors


def steps(task: ToyTask, removed: int | None = None) -> GoldSteps:
    """The tagger's reading of a task (:mod:`ace_env.steps`): its prompt, and its gold calls run in order
    (without call ``removed``: None in its place)."""
    store: dict[str, Any] = {}
    out: list[GoldStep | None] = []
    for i, (tool, args) in enumerate(task.gold):
        if i == removed:
            out.append(None)
            continue
        output, failed = call(store, tool, dict(args))
        out.append(GoldStep(tool, dict(args), output, failed))
    return GoldSteps(task.prompt, tuple(out))


# --------------------------------------------------------------------------- free-running rollouts


class ToyState:
    """One rollout's store, as the rollout engine runs a policy's calls on it (its entry's ``task_turns.state``):
    each call, as the policy wrote it, read (never evaluated) and run; its result is the engine's StepResult."""

    def __init__(self, task: ToyTask):
        self.task = task
        self.store: dict[str, Any] = {}

    def call(self, raw: Any, turn: int) -> executor.StepResult:
        parsed = parse_call(raw)
        if not isinstance(parsed, Call):
            return executor.StepResult(parsed.raw, executor.MALFORMED, detail=parsed.reason)
        if parsed.args:
            return executor.StepResult(parsed.render(), executor.MALFORMED, parsed.name,
                                       detail="toy tools take keyword arguments only")
        output, failed = call(self.store, parsed.name, dict(parsed.kwargs))
        return executor.StepResult(parsed.render(), executor.ERROR if failed else executor.OK, parsed.name,
                                   dict(parsed.kwargs), f"Error: {output}" if failed else output)


#: What the rollout engine plays of a toy task: its prompt as the one user turn, every tool, a fresh store.
TURNS = TaskTurns(user_message=lambda task, turn: {"role": "user", "content": task.prompt},
                  tools=lambda task, turn: SCHEMAS, state=ToyState)


# --------------------------------------------------------------------------- the verifier


def verify(task: ToyTask, turns: Any, rollout_id: str | None = None) -> Verdict:
    """A rollout judged against its task: rewarded when every call ran and the store is the expected one; a
    failed rollout fails at the first call that is not the gold's (in the gold's order), and the oracle steps
    before it passed.  Raises ValueError on turns that are not lists of calls."""
    if not isinstance(turns, list) or not all(isinstance(t, list) for t in turns):
        raise ValueError("'turns' must be a list of lists of calls")
    parsed = [parse_call(c) for turn in turns for c in turn]
    made = [(c.name, dict(c.kwargs)) for c in parsed if isinstance(c, Call) and not c.args]
    store, errors = run(made)
    n = max(len(task.gold), 1)
    if len(made) == len(parsed) and not errors and store == dict(task.expected):
        return Verdict(rollout_id, task.id, 1.0, 1.0, 1, 1, matched_steps=n, oracle_steps=n)
    j = 0
    while j < min(len(parsed), len(task.gold)) and isinstance(parsed[j], Call) and not parsed[j].args \
            and (parsed[j].name, parsed[j].kwargs) == (task.gold[j][0], dict(task.gold[j][1])):
        j += 1
    if j < len(task.gold):
        c = parsed[j] if j < len(parsed) else None
        kind = (STOPPED_EARLY if c is None else MALFORMED_CALL if not isinstance(c, Call) or c.args
                else WRONG_ARGUMENT if c.name == task.gold[j][0] else WRONG_TOOL_ATTRIBUTION)
        detail = f"call {j}: gold {task.gold[j][0]}, made {getattr(c, 'name', None) or str(c)[:80]}"
    else:  # the gold's calls, then more: the store the extra ones leave is judged
        j, kind, detail = n - 1, STATE_DIVERGED, "; ".join(errors[:1]) or "the store differs from the expected"
    return Verdict(rollout_id, task.id, 0.0, 0.0, 0, 1, failing_turn=0, failing_step=j, failing_oracle_step=j,
                   attribution=kind, detail=detail[:500], matched_steps=j, oracle_steps=n)


class ToyVerifier:
    """What ``ace verify`` and ``ace ingest`` stream a toy rollout file through: each rollout verified in this
    process (the toy's calls are a dictionary's), as BFCL's and τ²'s verifiers are used."""

    def __init__(self, tasks: Mapping[str, ToyTask]):
        self.tasks = tasks

    def start(self) -> ToyVerifier:
        return self

    def close(self) -> None:
        pass

    def __enter__(self) -> ToyVerifier:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def verify_stream(self, rollouts: Iterable[Any]) -> Iterator[tuple[Any, Verdict | LineError]]:
        for r in rollouts:
            task = self.tasks.get(r.task_id)
            if task is None:
                yield r, LineError(f"unknown task_id {r.task_id!r}")
                continue
            try:
                yield r, verify(task, r.turns, r.rollout_id)
            except ValueError as e:
                yield r, LineError(str(e))


def toy_verifier(tasks: Mapping[str, ToyTask], budget: Budget | None = None, address: str | None = None,
                 **kwargs: Any) -> ToyVerifier:
    if address is not None:
        raise ConfigError("--ray: toy rollouts are verified in this process; leave --ray out")
    return ToyVerifier(tasks)


def load_spec(groups: tuple[str, ...]) -> dict[str, ToyTask]:
    known = sorted({t.group for t in TASKS})
    unknown = [g for g in groups if g not in (*known, "all")]
    if unknown:
        raise TaskLoadError(f"unknown toy group {unknown[0]!r}; use {', '.join(known)} or all")
    return {t.id: t for t in TASKS if "all" in groups or t.group in groups}


def replay(tasks: Sequence[ToyTask], budget: Budget | None = None,
           on_task: Callable[[int], None] | None = None) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for task in tasks:
        counts = out.setdefault(task.group, {"tasks": 0, "passed": 0, "failed": 0, "errors": 0, "failures": []})
        store, errors = run([(t, dict(a)) for t, a in task.gold])
        counts["tasks"] += 1
        if not errors and store == dict(task.expected):
            counts["passed"] += 1
        else:
            counts["failed"] += 1
            counts["errors"] += bool(errors)
            counts["failures"].append(f"{task.id}: {errors[0] if errors else 'the store differs from the expected'}")
        if on_task:
            on_task(1)
    return out


def simulate_one(task: ToyTask, spec: WeaknessSpec, rng: random.Random) -> tuple[list[Any], list[Any]]:
    """One turn of the gold calls as call strings; each slips (a wrong tool, or a call that does not parse)
    with the weakness file's chance."""
    calls, slips, previous = [], [], None
    for i, (tool, args) in enumerate(task.gold):
        chance, weakness, cause = slip_chance(spec, tool, previous)
        text = render(tool, args)
        if rng.random() < chance:
            kind = weakness.kind if weakness.kind in (WRONG_TOOL, MALFORMED) else WRONG_TOOL
            text = f"{'get' if tool != 'get' else 'put'}(key='?')" if kind == WRONG_TOOL else text[:-1]
            slips.append({"turn": 0, "step": i, "tool": tool, "kind": kind, "cause": cause})
        calls.append(text)
        previous = tool
    return [calls], slips


def toy_simulate(tasks: Sequence[ToyTask], n: int, spec: WeaknessSpec, seed: int,
                 prefix: str = "sim") -> Iterator[dict[str, Any]]:
    return simulate(list(tasks), n, spec, seed, prefix, one=simulate_one)


# --------------------------------------------------------------------------- gold-prefix scoring


def render(tool: str, args: Iterable[tuple[str, Any]]) -> str:
    """A call as its call string: ``put(key='a', value=1)``."""
    return f"{tool}({', '.join(f'{k}={v!r}' for k, v in args)})"


def transcript(task: ToyTask) -> GoldTranscript:
    """The gold transcript of a task: the system prompt, the user's prompt, each gold call as one assistant
    tool call with its real output, and the closing text; one step per gold call."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                      {"role": "user", "content": task.prompt}]
    steps: list[PrefixStep] = []
    store: dict[str, Any] = {}
    for j, (tool, args) in enumerate(task.gold):
        output, _ = call(store, tool, dict(args))
        steps.append(PrefixStep(j, 0, j, tool, render(tool, args), len(messages), j - 1 if j else None))
        call_id = f"call_{j}"
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": tool, "arguments": json.dumps(dict(args))}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "name": tool, "content": output})
    messages.append({"role": "assistant", "content": DONE_MESSAGE})
    return GoldTranscript(task, messages, steps, tools=SCHEMAS)


def _first_call(reply: Any) -> tuple[str, dict[str, Any]] | str | None:
    """The reply's first call as (tool, arguments); "malformed" for one that does not read; None without one."""
    calls = parse_message(reply.message).calls
    if not calls:
        return None
    first = calls[0]
    if isinstance(first, dict) and not is_malformed(first) and isinstance(first.get("arguments"), dict):
        return str(first["name"]), dict(first["arguments"])
    parsed = parse_call(first) if isinstance(first, str) else None
    if isinstance(parsed, Call) and not parsed.args:
        return parsed.name, dict(parsed.kwargs)
    return "malformed"


def judge_reply(tr: GoldTranscript, s: PrefixStep, reply: Any) -> StepVerdict:
    """An answer at step ``s``: its first call in place of gold call ``s``, then the rest of the gold, run; it
    passes when the run leaves the expected store and the call returned what the gold call returned."""
    task: ToyTask = tr.task
    verdict = StepVerdict(answer=str(reply.message.get("content") or "")[:500])
    if reply.finish_reason == "error":
        verdict.attribution = "inference_error"
        return verdict
    made = _first_call(reply)
    if made is None or made == "malformed":
        verdict.attribution = STOPPED_EARLY if made is None else MALFORMED_CALL
        return verdict
    tool, args = made
    gold_tool, gold_args = task.gold[s.index]
    verdict.tool_right = tool == gold_tool
    verdict.exact = verdict.tool_right and args == dict(gold_args)
    calls = [(t, dict(a)) for t, a in task.gold]
    calls[s.index] = (tool, args)
    store: dict[str, Any] = {}
    outputs = [call(store, t, a) for t, a in calls]
    gold_output = tr.messages[s.message + 1]["content"]
    verdict.passed = store == dict(task.expected) and not any(failed for _, failed in outputs) \
        and outputs[s.index][0] == gold_output
    if not verdict.passed:
        verdict.attribution = WRONG_ARGUMENT if verdict.tool_right else WRONG_TOOL_ATTRIBUTION
    return verdict


@contextmanager
def toy_judge(tasks: Mapping[str, ToyTask], budget: Budget) -> Iterator[Judge]:
    """The toy's judge: every answer run in this process (its calls are a dictionary's)."""
    yield lambda steps, replies: [judge_reply(tr, s, r) for (tr, s), r in zip(steps, replies, strict=True)]


#: The toy's part of gold-prefix scoring: its prefix is the user's prompt and the gold calls before the step.
GOLD_PREFIX = GoldPrefix("task-prompt", transcript, toy_judge)


def gold_prefix_step(task: ToyTask, turn: int, index: int, spec: WeaknessSpec,
                     rng: random.Random) -> tuple[str, dict[str, Any] | None]:
    """The simulated agent's answer at gold call ``index``: the gold call, or (with the weakness file's chance,
    keyed on the gold call before it) the slip :func:`simulate_one` would make there."""
    tool, args = task.gold[index]
    previous = task.gold[index - 1][0] if index else None
    chance, weakness, cause = slip_chance(spec, tool, previous)
    text = render(tool, args)
    if rng.random() >= chance:
        return text, None
    kind = weakness.kind if weakness.kind in (WRONG_TOOL, MALFORMED) else WRONG_TOOL
    made = f"{'get' if tool != 'get' else 'put'}(key='?')" if kind == WRONG_TOOL else text[:-1]
    return made, {"turn": turn, "index": index, "tool": tool, "kind": kind, "cause": cause}


# --------------------------------------------------------------------------- export

#: The file of its own export format (``ace export --format toy``): one task per line.
TASKS_FILE = "toy_tasks.jsonl"


def task_line(task: ToyTask) -> dict[str, Any]:
    """A task as one JSON object: id, group, prompt, gold calls, expected store."""
    return {"id": task.id, "group": task.group, "prompt": task.prompt,
            "gold": [[t, dict(a)] for t, a in task.gold], "expected": dict(task.expected)}


def write_tasks(tasks: Iterable[ToyTask], folder: Path, report: Any) -> None:
    """``ace export --format toy``: its tasks as JSON lines (:func:`task_line`)."""
    with open(folder / TASKS_FILE, "w", encoding="utf-8") as f:
        for task in tasks:
            if not isinstance(task, ToyTask):
                report.skip(task.id, "not a toy task")
                continue
            f.write(json.dumps(task_line(task)) + "\n")
            report.written += 1


def trl_row(task: ToyTask) -> dict[str, Any]:
    """``ace export --format trl``: a GRPO row, the prompt a policy starts from, its tools and the task."""
    return {"prompt": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": task.prompt}],
            "tools": SCHEMAS, "task": json.dumps(task_line(task)), "task_id": task.id}


#: What a trl export's dataset_info.json says of the toy's rows.
TRL_INFO = {"columns": {"prompt": "the system message and the user's prompt", "tools": "the toy's OpenAI tool schemas",
                        "task": "the task as a JSON string (tests/toyenv.py's task_line): its gold calls and the "
                                "store they leave, what tests/toyenv.py's verify judges a rollout against",
                        "task_id": "the task's id"},
            "system_prompt": SYSTEM_PROMPT}


TOY = ToolEnvironment(
    name=NAME, title="Toy key-value store", task_type=ToyTask,
    replay=replay,
    load_weakness=lambda path, tasks: load_weakness(path, TOOLS, "a toy tool"),
    simulate=toy_simulate,
    simulate_turns=simulate_one,
    verifier=toy_verifier,
    tool_info=lambda tasks: {name: (NAME, doc) for name, doc in TOOLS.items()},
    tagging="gold-actions",
    own_source=None,
    dialogues=False,
    gold_steps=lambda task: max(len(task.gold), 1),
    export_format=NAME,
    results_spec=lambda path: None,
    fill_hint=f"simulate some: `ace sim rollouts --tasks {NAME} --n 100 --out r.jsonl`.",
    load_spec=load_spec,
    probes=False,
    demo_weakness=None,
    steps=steps,
    tool_skills=SKILLS,
    gold_prefix=GOLD_PREFIX,
    gold_prefix_step=gold_prefix_step,
    export_writer=write_tasks,
    export_rows={"openai-sft": ExportRows(lambda task: sft_row(transcript(task))),  # its gold transcript, as it is
                 "trl": ExportRows(trl_row, info=TRL_INFO)},
    task_turns=TURNS,
)


def register(monkeypatch: Any) -> ToolEnvironment:
    """Register the toy environment for one test (pytest's ``monkeypatch`` takes it out again)."""
    monkeypatch.setitem(ENVIRONMENTS, NAME, TOY)
    return TOY


def weakness_file(folder: Path) -> Path:
    path = folder / "toy_weakness.toml"
    path.write_text('[[tool]]\nname = "incr"\nerror = 1.0\nkind = "wrong_tool"\n', encoding="utf-8")
    return path


#: The composition :func:`composition_file` plants: incr slips to the wrong tool right after put.
COMPOSITION = ("put", "incr")


def composition_file(folder: Path, error: float = 0.8) -> Path:
    """A weakness file planting :data:`COMPOSITION` (and the default 0.02 elsewhere)."""
    path = folder / "toy_composition.toml"
    path.write_text(f'[[composition]]\nfrom = "{COMPOSITION[0]}"\nto = "{COMPOSITION[1]}"\nerror = {error}\n'
                    'kind = "wrong_tool"\n', encoding="utf-8")
    return path


# --------------------------------------------------------------------------- synthesis (the one contract)
#
# The toy's synthesis, declared on its entry (``ToolEnvironment.synthesis``) as BFCL's and τ²'s are reached:
# one strategy with its own check, and what the one pipeline (synth.pipeline) calls on toy tasks.  ``ace synth
# --tasks toy`` (or on a toy scope) runs it with nothing of it outside this module.

import dataclasses  # noqa: E402  (this section's own imports, kept with it)

from ace_env.synthesis import Check, Declared, Synthesis  # noqa: E402

READ_BACK = "not_read_back"


@dataclass(frozen=True)
class ToySynthTask(ToyTask):
    """A toy task ``ace synth`` made: a seed's task with what the strategy changed, and where it came from."""

    origin: tuple[tuple[str, Any], ...] = ()  # seed, strategy, target, and the rollouts' outcome

    @property
    def provenance(self) -> dict[str, Any]:
        o = dict(self.origin)
        return {"synthesized": True, "parents": [o.get("seed")], "strategy": o.get("strategy"),
                "target_edge": o.get("target"), **{k: v for k, v in o.items() if k not in ("seed", "strategy", "target")}}

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "group": self.group, "prompt": self.prompt, "gold": [[t, dict(a)] for t, a in self.gold],
                "expected": dict(self.expected), "source": self.source, "provenance": self.provenance}


def _adjacent(gold: Sequence[tuple[str, Any]], target: tuple[str, str]) -> list[int]:
    return [j for j in range(len(gold) - 1) if (gold[j][0], gold[j + 1][0]) == tuple(target)]


def read_back(seed: ToyTask, target: tuple[str, str], strength: float, rng: random.Random) -> dict[str, Any] | None:
    """Two more dependent steps, last: B once more on the key it wrote, then that key read back (None when B
    only reads)."""
    spots = _adjacent(seed.gold, target)
    if not spots:
        return None
    tool, args = seed.gold[spots[-1] + 1]
    key = dict(args).get("key")
    if tool == "get" or key is None:
        return None
    gold = seed.gold + ((tool, args), ("get", (("key", key),)))
    store, _ = run([(t, dict(a)) for t, a in gold])
    return {"gold": gold, "expected": tuple(sorted(store.items())), "what": f"{tool} {key} again, then get {key}",
            "prompt": f"{seed.prompt} Then {tool} {key} once more and read {key} back."}


def _read_back_problems(c: Any) -> list[str]:
    """read_back: the new last step reads a key the gold wrote."""
    tool, args = c.task.gold[-1]
    written = {dict(a).get("key") for t, a in c.task.gold[:-1] if t != "get"}
    return [] if tool == "get" and dict(args).get("key") in written else ["the last step reads nothing written"]


def _usable(seeds: Mapping[str, ToyTask]) -> dict[str, ToyTask]:
    return {i: t for i, t in seeds.items() if not isinstance(t, ToySynthTask) and not _gold_problems(t)}


def _gold_problems(task: ToyTask) -> list[str]:
    store, errors = run([(t, dict(a)) for t, a in task.gold])
    return ["gold_error"] if errors else [] if store == dict(task.expected) else ["gold_rejected"]


def _seeds_by_target(edges: list[dict[str, Any]], seeds: Mapping[str, ToyTask]) -> dict[tuple[str, str], list[str]]:
    return {(r["from"], r["to"]): sorted(i for i, t in seeds.items() if _adjacent(t.gold, (r["from"], r["to"])))
            for r in edges}


def _assemble(seed: ToyTask, target: tuple[str, str], strategy: str, draft: dict[str, Any]) -> ToySynthTask:
    digest = hashlib.sha256(json.dumps([seed.id, strategy, draft["gold"]]).encode()).hexdigest()[:8]
    origin = (("seed", seed.id), ("strategy", strategy), ("target", f"{target[0]}>{target[1]}"),
              ("what", draft["what"]))
    return ToySynthTask(f"{seed.id}-{strategy}-{digest}", seed.group, draft["prompt"], draft["gold"],
                        draft["expected"], origin=origin)


def _verify(task: ToyTask, turns: list[Any], rollout_id: str) -> tuple[float, str | None]:
    v = verify(task, turns, rollout_id)
    return v.reward, v.attribution


def _synthesis() -> Synthesis:
    return Synthesis(
        strategies=(Declared("depth", build=read_back, depth=3, checks=(Check(READ_BACK, _read_back_problems),),
                             definition="B once more on the key it wrote, then that key read back, last",
                             needs="B writes a key"),),
        usable=_usable, seeds_by_target=_seeds_by_target,
        has_target=lambda task, target: bool(_adjacent(task.gold, target)),
        assemble=_assemble, check=_gold_problems, verify=_verify,
        with_outcome=lambda task, outcome: dataclasses.replace(task, origin=task.origin + tuple(outcome.items())),
        domain=lambda task: task.group)


SYNTHESIS = _synthesis()


def holds_task_file(path: Path) -> bool:
    """Whether a JSONL file holds toy tasks ``ace synth`` wrote (its first line is one: :meth:`ToySynthTask.to_dict`)."""
    try:
        for _, line in task_file_lines(path):
            row = json.loads(line)
            return isinstance(row, dict) and row.get("source") == NAME and "gold" in row
    except (OSError, TaskLoadError, ValueError, RecursionError):
        return False
    return False


def load_task_file(path: Path, budget: Budget | None = None) -> dict[str, ToySynthTask]:
    """The toy tasks of a file ``ace synth --out`` wrote, by id (each written back as it was read); one line for a
    line that is not one, or an id that repeats."""
    tasks: dict[str, ToySynthTask] = {}
    for n, line in task_file_lines(path):
        try:
            row = json.loads(line)
            p = dict(row["provenance"])
            origin = (("seed", p.pop("parents")[0]), ("strategy", p.pop("strategy")), ("target", p.pop("target_edge")),
                      *((k, v) for k, v in p.items() if k != "synthesized"))
            task = ToySynthTask(row["id"], row["group"], row["prompt"],
                                tuple((t, tuple(sorted(a.items()))) for t, a in row["gold"]),
                                tuple(sorted(row["expected"].items())), row["source"], origin=origin)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError) as e:
            raise TaskLoadError(f"{path}:{n}: not a toy task ({type(e).__name__})") from e
        if task.source != NAME or task.id in tasks:
            raise TaskLoadError(f"{path}:{n}: not a toy task, or its id repeats")
        tasks[task.id] = task
    return tasks


#: The toy's entry, with its synthesis declared and its task files read (what :func:`register` puts in the registry).
TOY = dataclasses.replace(TOY, synthesis=SYNTHESIS, task_file=TaskFile(holds=holds_task_file, load=load_task_file))
