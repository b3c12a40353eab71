"""The composition-level oracle: a task's ground truth, executed, and cached.

The **oracle** of a task is its ground truth replayed through the safe
executor: per turn, each call with its output, and a snapshot plus fingerprint
of every instance's public state after the turn.  It is computed once per
task and cached (in memory and on disk, keyed by the task's content and the
code that decides it: :data:`ORACLE_SOURCES`).  The verifier
(:mod:`ace_env.verifier`) compares rollouts with it; calls are compared by
their :func:`match_key`.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ace_env import bfcl
from ace_env.cache import TaskCache
from ace_env.executor import OK, RolloutState, parse_with_arguments, restore
from ace_env.tasks import Task


def match_key(name: str | None, arguments: dict[str, Any]) -> tuple[Any, ...]:
    """Two calls match when names and canonical arguments (signature order) print the same."""
    return (name, repr(arguments))


@functools.lru_cache(maxsize=65_536)
def parsed_match_key(raw: str) -> tuple[Any, dict[str, Any] | None, tuple[Any, ...] | None]:
    """:func:`ace_env.executor.parse_with_arguments` of a call string and its match key (read-only results)."""
    parsed, arguments = parse_with_arguments(raw)
    return parsed, arguments, None if arguments is None else match_key(parsed.name, arguments)


@dataclass
class OracleStep:
    call: str
    name: str
    arguments: dict[str, Any]
    output: str
    status: str


@dataclass
class OracleTurn:
    """The oracle after one turn: its calls, and every instance's complete state as bytes."""

    steps: list[OracleStep]
    checkpoint: bytes = field(repr=False)
    #: The turn before, when this turn made no call: the state is that turn's (loaded once for both).
    same_as: "OracleTurn | None" = field(default=None, repr=False)
    _state: dict[str, dict[str, Any]] | None = field(default=None, repr=False)
    _fingerprint: str | None = field(default=None, repr=False)
    _keys: list[tuple[Any, ...]] | None = field(default=None, repr=False)

    @property
    def state(self) -> dict[str, dict[str, Any]]:
        """Public attributes of every instance after the turn (loaded on first use)."""
        if self.same_as is not None:
            return self.same_as.state
        if self._state is None:
            self._state = {
                cls: {k: v for k, v in vars(inst).items() if not k.startswith("_")}
                for cls, inst in restore(self.checkpoint)[0].items()
            }
        return self._state

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the canonical public state after the turn (computed on first use)."""
        if self._fingerprint is None:
            self._fingerprint = fingerprint(self.state)
        return self._fingerprint

    @property
    def keys(self) -> list[tuple[Any, ...]]:
        """Comparable keys of the turn's calls (name and canonical arguments)."""
        if self._keys is None:
            self._keys = [match_key(s.name, s.arguments) for s in self.steps]
        return self._keys


@dataclass
class Oracle:
    """The ground truth of a task, executed."""

    task_id: str
    turns: list[OracleTurn]
    errors: list[str] = field(default_factory=list)
    initial: bytes = field(default=b"", repr=False)  # checkpoint before the first turn (b"": fresh instances)

    @property
    def n_steps(self) -> int:
        return sum(len(t.steps) for t in self.turns)


def canonical(value: Any, _path: tuple[int, ...] = ()) -> Any:
    """A JSON-able, order-independent encoding of public state (cycles become refs)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if id(value) in _path:
        return {"__ref__": len(_path) - _path.index(id(value))}
    path = _path + (id(value),)
    if isinstance(value, dict):
        items = sorted(((repr(k), canonical(v, path)) for k, v in value.items()), key=lambda kv: kv[0])
        return {"__dict__": items}
    if isinstance(value, (list, tuple)):
        return [canonical(v, path) for v in value]
    if isinstance(value, (set, frozenset)):
        return {"__set__": sorted(json.dumps(canonical(v, path), sort_keys=True) for v in value)}
    if hasattr(value, "__dict__"):
        attrs = {k: v for k, v in vars(value).items() if not k.startswith("_")}
        return {"__class__": type(value).__name__, "attrs": canonical(attrs, path)}
    return {"__repr__": repr(value)}


def fingerprint(state: Any) -> str:
    """SHA-256 of the canonical encoding of a state."""
    blob = json.dumps(canonical(state), sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def replay_oracle(task: Task) -> Oracle:
    """Execute a task's ground truth and record the oracle (not cached)."""
    env = RolloutState(task)
    turns: list[OracleTurn] = []
    errors: list[str] = []
    for t, turn in enumerate(task.turns):
        steps = []
        for raw in turn.ground_truth:
            r = env.call(raw, t)
            if r.status != OK:
                errors.append(f"turn {t}: {raw!r}: {r.status}: {r.detail or r.output}")
            steps.append(OracleStep(str(r.raw), r.name or "", r.arguments, r.output or "", r.status))
        if not steps and turns:
            # No call, so nothing changed: the turn before's state, not a second copy of it.
            before = turns[-1].same_as or turns[-1]
            turns.append(OracleTurn(steps, before.checkpoint, same_as=before))
        else:
            turns.append(OracleTurn(steps, env.checkpoint()))
    # No checkpoint of the start: a rollout that deviates in the first turn starts from fresh
    # instances, which is what the start is (RolloutState(task) is deterministic).
    return Oracle(task.id, turns, errors)


_HERE = Path(__file__).parent

#: The files whose code decides an oracle (a cache built by other code is not reused).
ORACLE_SOURCES = tuple(_HERE / n for n in ("oracle.py", "verifier.py", "executor.py", "calls.py", "tasks.py", "bfcl/__init__.py",
                                          "views.py", "values.py"))

#: The version of the benchmark whose code the oracle runs: a cache of what oracles decide is keyed by it too.
ORACLE_SALT = bfcl.installed_version()

#: The signature (without ``self``) of a function the oracle runs, by name; None when unknown: what binds a
#: call's positional arguments to its parameters.
tool_signature = bfcl.signature

#: Oracles by task content: the 1,024 most recent in memory, all on disk (see :mod:`ace_env.cache`).
ORACLES: TaskCache[Oracle] = TaskCache(
    "oracle",
    replay_oracle,
    maxsize=1024,
    sources=ORACLE_SOURCES,
    salt=ORACLE_SALT,
)


def oracle_for(task: Task, fingerprint: str | None = None) -> Oracle:
    """The oracle of a task, cached by the task's content fingerprint (pass it if known)."""
    return ORACLES.get(task, fingerprint)


def has_oracle(task: Task, fingerprint: str | None = None) -> bool:
    """Whether the task's oracle is held in memory already (pass the task's fingerprint if known)."""
    return ORACLES.in_memory(task, fingerprint)


def clear_oracle_cache() -> None:
    """Forget the oracles held in memory (the disk cache stays), and the calls' match keys."""
    ORACLES.clear()
    parsed_match_key.cache_clear()
