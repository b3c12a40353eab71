"""A toy third environment, in the tests only: a key-value store an agent writes and reads with three tools.

It is registered as BFCL and τ²-bench are (a :class:`~ace_env.environments.ToolEnvironment` entry in
:data:`~ace_env.environments.ENVIRONMENTS`, see :func:`register`), and the commands reach it through that
entry alone: ``ace env replay toy``, ``ace env replay --tasks toy:counter``, ``ace sim rollouts --tasks toy``.
Everything it needs is in this module (see docs/environments.md for what an environment implements).
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from ace_env.environments import ENVIRONMENTS, ToolEnvironment
from ace_env.errors import TaskLoadError
from ace_env.sim import MALFORMED, WRONG_TOOL, WeaknessSpec, load_weakness, simulate, slip_chance
from ace_env.worker import Budget

NAME = "toy"

#: The tools and their descriptions: ``put(key, value)``, ``get(key)``, ``incr(key)`` (a missing key is 0).
TOOLS = {"put": "Store value under key.", "get": "The value under key.", "incr": "Add one to the number under key."}


@dataclass(frozen=True)
class ToyTask:
    """A task: the gold calls (tool, arguments) and the store they must leave."""

    id: str
    group: str
    gold: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]
    expected: tuple[tuple[str, Any], ...]
    source: str = NAME

    def fingerprint(self) -> str:
        return hashlib.sha256(json.dumps([self.id, self.gold, self.expected]).encode()).hexdigest()[:16]


def _task(tid: str, group: str, calls: list[tuple[str, dict[str, Any]]], expected: dict[str, Any]) -> ToyTask:
    return ToyTask(f"{NAME}:{tid}", group, tuple((t, tuple(sorted(a.items()))) for t, a in calls),
                   tuple(sorted(expected.items())))


TASKS = (
    _task("put_get", "store", [("put", {"key": "a", "value": 1}), ("get", {"key": "a"})], {"a": 1}),
    _task("two_keys", "store", [("put", {"key": "a", "value": 2}), ("put", {"key": "b", "value": 3})], {"a": 2, "b": 3}),
    _task("count_twice", "counter", [("incr", {"key": "n"}), ("incr", {"key": "n"})], {"n": 2}),
    _task("put_then_incr", "counter", [("put", {"key": "n", "value": 5}), ("incr", {"key": "n"}), ("get", {"key": "n"})],
          {"n": 6}),
)


def run(calls: Sequence[tuple[str, Mapping[str, Any]]]) -> tuple[dict[str, Any], list[str]]:
    """The store the calls leave, and one line per call that failed."""
    store: dict[str, Any] = {}
    errors = []
    for i, (tool, args) in enumerate(calls):
        if tool == "put" and set(args) == {"key", "value"}:
            store[args["key"]] = args["value"]
        elif tool == "incr" and set(args) == {"key"} and isinstance(store.get(args["key"], 0), int):
            store[args["key"]] = store.get(args["key"], 0) + 1
        elif tool != "get" or set(args) != {"key"}:
            errors.append(f"call {i}: {tool}({', '.join(args)}) is not a toy tool call")
    return store, errors


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
        text = f"{tool}({', '.join(f'{k}={v!r}' for k, v in args)})"
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


def unsupported(*args: Any, **kwargs: Any) -> Any:
    raise TaskLoadError("the toy environment has no verifier yet")


TOY = ToolEnvironment(
    name=NAME, title="Toy key-value store", task_type=ToyTask,
    replay=replay,
    load_weakness=lambda path, tasks: load_weakness(path, TOOLS, "a toy tool"),
    simulate=toy_simulate,
    simulate_turns=simulate_one,
    verifier=unsupported,
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
)


def register(monkeypatch: Any) -> ToolEnvironment:
    """Register the toy environment for one test (pytest's ``monkeypatch`` takes it out again)."""
    monkeypatch.setitem(ENVIRONMENTS, NAME, TOY)
    return TOY


def weakness_file(folder: Path) -> Path:
    path = folder / "toy_weakness.toml"
    path.write_text('[[tool]]\nname = "incr"\nerror = 1.0\nkind = "wrong_tool"\n', encoding="utf-8")
    return path
