"""A simulated agent with planted weaknesses.

The simulated agent walks a task's ground truth call by call and slips with a
probability set by a *weakness file* (TOML)::

    [defaults]
    error = 0.02                  # chance that any call slips
    kind = "argument"             # optional; the kind of a default slip
    [[tool]]                      # a tool that is weak everywhere
    name = "grep"
    error = 0.35
    kind = "argument"             # argument | wrong_tool | skip | early_stop | malformed
    [[composition]]               # `to` fails more often when it follows `from`
    from = "get_zipcode_based_on_city"
    to = "estimate_distance"
    error = 0.6
    kind = "argument"

A call slips with probability ``max(defaults.error, tool.error,
composition.error)``, the composition counting only when the previous
ground-truth call (in the same turn, or the last call of the previous
non-empty turn) is its ``from``.  The kind applied is that of the source with
the highest error (ties go to the most specific: composition, then tool).

Rollout ``k`` of a batch is drawn from ``random.Random(seed * 1_000_003 + k)``
alone, so any rollout can be regenerated on its own and the same seed gives
the same rollouts.  Each rollout's ``meta["slips"]`` records the planted
mistakes, so analyses mined from the rollouts can be checked against them.
"""

from __future__ import annotations

import random
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ace_env import twins
from ace_env.bfcl import functions
from ace_env.calls import Call, parse_call
from ace_env.errors import ConfigError
from ace_env.perturb import alter_call
from ace_env.tasks import Task
from ace_env.verifier import verify
from ace_env.workspace import check_readable

DEMO_WEAKNESS = Path(__file__).resolve().parent / "demo_weakness.toml"  # the planted weaknesses of `ace demo`

ARGUMENT = "argument"
WRONG_TOOL = "wrong_tool"
SKIP = "skip"
EARLY_STOP = "early_stop"
MALFORMED = "malformed"
KINDS = (ARGUMENT, WRONG_TOOL, SKIP, EARLY_STOP, MALFORMED)

#: The kind recorded for a call made in a turn whose ground truth is empty.
ACTED_WITHOUT_NEED = "acted_without_need"

SEED_STRIDE = 1_000_003

_ALTER_TRIES = 4  # alternatives tried for an argument slip before falling back to wrong_tool


@dataclass(frozen=True)
class Weakness:
    error: float
    kind: str = ARGUMENT


@dataclass
class WeaknessSpec:
    """Planted weaknesses: a default slip rate, weak tools, weak compositions."""

    default: Weakness = field(default_factory=lambda: Weakness(0.02))
    tools: dict[str, Weakness] = field(default_factory=dict)
    compositions: dict[tuple[str, str], Weakness] = field(default_factory=dict)
    source: str = "<defaults>"

    def to_dict(self) -> dict[str, Any]:
        return {
            "defaults": {"error": self.default.error, "kind": self.default.kind},
            "tool": [{"name": n, "error": w.error, "kind": w.kind} for n, w in self.tools.items()],
            "composition": [
                {"from": a, "to": b, "error": w.error, "kind": w.kind} for (a, b), w in self.compositions.items()
            ],
        }


# --------------------------------------------------------------------------- loading


def _error(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: 'error' must be a number in [0, 1], not {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise ConfigError(f"{where}: 'error' = {value!r} is outside [0, 1]")
    return float(value)


def _kind(value: Any, where: str) -> str:
    if value not in KINDS:
        raise ConfigError(f"{where}: unknown kind {value!r}; use one of {', '.join(KINDS)}")
    return value


def _keys(entry: Any, allowed: set[str], required: set[str], where: str) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: must be a table")
    unknown = sorted(set(entry) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
    missing = sorted(required - set(entry))
    if missing:
        raise ConfigError(f"{where}: missing key(s) {', '.join(missing)}")
    return entry


def _tool_name(value: Any, key: str, where: str, known: Any, what: str) -> str:
    if not isinstance(value, str) or value not in known:
        examples = ", ".join(repr(n) for n in sorted(known)[:2])
        raise ConfigError(f"{where}: {key} = {value!r} is not {what} (names are case-sensitive, e.g. {examples})")
    return value


def parse_weakness(data: dict[str, Any], source: str = "<weakness>", known: Any = None,
                   what: str = "a BFCL multi-turn function") -> WeaknessSpec:
    """Validate decoded TOML; every error names ``source`` and the entry.

    ``known``: the tool names the file may name (default: BFCL's multi-turn functions); ``what`` says
    what they are in an error (the τ² simulated agent passes its domains' agent tools).
    """

    known = functions() if known is None else frozenset(known)
    _keys(data, {"defaults", "tool", "composition"}, set(), source)
    d = _keys(data.get("defaults", {}), {"error", "kind"}, set(), f"{source}: [defaults]")
    default_kind = _kind(d.get("kind", ARGUMENT), f"{source}: [defaults]")
    spec = WeaknessSpec(
        default=Weakness(_error(d.get("error", 0.02), f"{source}: [defaults]"), default_kind), source=source
    )
    tools = data.get("tool", [])
    if not isinstance(tools, list):
        raise ConfigError(f"{source}: 'tool' must be an array of tables ([[tool]])")
    for n, entry in enumerate(tools, 1):
        where = f"{source}: [[tool]] #{n}"
        e = _keys(entry, {"name", "error", "kind"}, {"name", "error"}, where)
        where = f"{where} ({e['name']!r})"
        name = _tool_name(e["name"], "name", where, known, what)
        if name in spec.tools:
            raise ConfigError(f"{where}: tool {name!r} is listed twice")
        spec.tools[name] = Weakness(_error(e["error"], where), _kind(e.get("kind", default_kind), where))
    comps = data.get("composition", [])
    if not isinstance(comps, list):
        raise ConfigError(f"{source}: 'composition' must be an array of tables ([[composition]])")
    for n, entry in enumerate(comps, 1):
        where = f"{source}: [[composition]] #{n}"
        e = _keys(entry, {"from", "to", "error", "kind"}, {"from", "to", "error"}, where)
        where = f"{where} ({e['from']!r} -> {e['to']!r})"
        pair = (_tool_name(e["from"], "from", where, known, what), _tool_name(e["to"], "to", where, known, what))
        if pair in spec.compositions:
            raise ConfigError(f"{where}: this composition is listed twice")
        spec.compositions[pair] = Weakness(_error(e["error"], where), _kind(e.get("kind", default_kind), where))
    return spec


def load_weakness(path: str | Path | None, known: Any = None, what: str = "a BFCL multi-turn function") -> WeaknessSpec:
    """Read and validate a weakness file; ``None`` gives the defaults (error 0.02).  ``known``, ``what``: as
    :func:`parse_weakness`."""
    if path is None:
        return WeaknessSpec()
    path = check_readable(path, "weakness file")  # a regular file: a FIFO would block, a device read as empty
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML ({e})") from e
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text ({e})") from e
    except ValueError as e:  # a number past Python's int-str conversion limit (4,300 digits)
        raise ConfigError(f"{path}: a value cannot be read ({str(e).split(':')[0]}); errors are numbers in "
                          "[0, 1]") from None
    except RecursionError:  # arrays or inline tables nested thousands deep
        raise ConfigError(f"{path}: TOML nested too deeply to read; a weakness file is a few flat tables "
                          "([defaults], [[tool]], [[composition]])") from None
    if not data:
        raise ConfigError(f"{path}: holds no weaknesses (it is empty or only comments); give [defaults], "
                          "[[tool]] or [[composition]] entries, or no file (every call then slips with "
                          "probability 0.02)")
    return parse_weakness(data, str(path), known, what)


# --------------------------------------------------------------------------- simulation


def _name(call: str) -> str | None:
    parsed = parse_call(call)
    return parsed.name if isinstance(parsed, Call) else None


def slip_chance(spec: WeaknessSpec, tool: str | None, previous: str | None) -> tuple[float, Weakness, str]:
    """The slip probability of calling ``tool`` right after ``previous``, its weakness and cause."""
    best, cause = spec.default, "default"
    w = spec.tools.get(tool) if tool else None
    if w is not None and w.error >= best.error:
        best, cause = w, "tool"
    w = spec.compositions.get((previous, tool)) if tool and previous else None
    if w is not None and w.error >= best.error:
        best, cause = w, "composition"
    return best.error, best, cause


class _FailsAt:
    """Whether a mistake at one ground-truth step makes the verifier fail right there.

    The check verifies the ground truth up to turn ``t`` with step ``i`` of turn
    ``t`` replaced (or removed, for ``None``) and asks that the first failure be
    that step.  Results are cached per task, step and replacement.
    """

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str, int, int, str | None], bool] = {}

    def __call__(self, task: Task, t: int, i: int, replacement: str | None) -> bool:
        key = (task.source, task.id, t, i, replacement)
        hit = self._cache.get(key)
        if hit is None:
            if len(self._cache) > 200_000:
                self._cache.clear()
            hit = self._cache[key] = self._compute(task, t, i, replacement)
        return hit

    @staticmethod
    def _compute(task: Task, t: int, i: int, replacement: str | None) -> bool:

        turns = [list(turn.ground_truth) for turn in task.turns[: t + 1]]
        if replacement is None:
            del turns[t][i]
        else:
            turns[t][i] = replacement
        v = verify(task, turns)
        return v.reward == 0.0 and (v.failing_turn, v.failing_oracle_step) == (t, i)


_fails_at = _FailsAt()


def _wrong_tool(task: Task, t: int, gt: str, rng: random.Random) -> str | None:
    """A wrong-way twin of the right tool when the task offers one, else another offered tool of the same class
    (else any other offered tool)."""

    fns = functions()
    parsed = parse_call(gt)
    if not isinstance(parsed, Call):
        return None
    near = sorted(n for n in task.offered_tools(t) if n in twins.TWINS and twins.TWINS[n].real == parsed.name)
    if near:  # a wrong-way twin offered beside the right tool is the careless pick, with the right arguments
        return Call(rng.choice(near), parsed.args, parsed.kwargs).render()
    offered = sorted(n for n in task.offered_tools(t) if n != parsed.name and n in fns)
    owner = fns[parsed.name].class_name if parsed.name in fns else None
    same = [n for n in offered if fns[n].class_name == owner]
    pool = same or offered
    if not pool:
        return None
    name = rng.choice(pool)
    params = set(fns[name].doc.get("parameters", {}).get("properties", {}))
    if not parsed.args and parsed.kwargs and set(parsed.kwargs) <= params:
        return Call(name, (), dict(parsed.kwargs)).render()
    return Call(name).render()


def _malformed(gt: str) -> str:
    """An unparsable version of a call string (its closing parenthesis cut)."""
    text = gt.rstrip()
    return text[:-1] if text.endswith(")") else text + "("


def _apply(task: Task, t: int, i: int, gt: str, kind: str, rng: random.Random) -> tuple[str, str | None]:
    """The kind actually applied and the call made instead (None: no call)."""
    if kind == ARGUMENT:
        for _ in range(_ALTER_TRIES):
            altered = alter_call(gt, rng)
            if altered is None:
                break
            if altered != gt and _fails_at(task, t, i, altered):
                return ARGUMENT, altered
        kind = WRONG_TOOL
    if kind == WRONG_TOOL:
        for _ in range(_ALTER_TRIES):
            other = _wrong_tool(task, t, gt, rng)
            if other is None:
                break
            if _fails_at(task, t, i, other):
                return WRONG_TOOL, other
        kind = SKIP
    if kind == SKIP and not _fails_at(task, t, i, None):
        kind = MALFORMED  # the step is redundant on its own (its output is made elsewhere)
    if kind == MALFORMED:
        return MALFORMED, _malformed(gt)
    return kind, None  # skip, early_stop


def simulate_one(task: Task, spec: WeaknessSpec, rng: random.Random) -> tuple[list[list[str]], list[dict[str, Any]]]:
    """One rollout of ``task``: its turns and the slips planted in it."""
    turns: list[list[str]] = []
    slips: list[dict[str, Any]] = []
    previous: str | None = None
    stopped = False
    for t, turn in enumerate(task.turns):
        calls: list[str] = []
        turns.append(calls)
        if stopped:
            continue
        if not turn.ground_truth:
            if rng.random() < spec.default.error:
                offered = sorted(task.offered_tools(t))
                if offered:
                    name = rng.choice(offered)
                    calls.append(Call(name).render())
                    slips.append({"turn": t, "index": 0, "tool": name, "kind": ACTED_WITHOUT_NEED, "cause": "default"})
            continue
        for i, gt in enumerate(turn.ground_truth):
            tool = _name(gt)
            p, weakness, cause = slip_chance(spec, tool, previous)
            previous = tool
            if p <= 0.0 or rng.random() >= p:
                calls.append(gt)
                continue
            kind, made = _apply(task, t, i, gt, weakness.kind, rng)
            slip = {"turn": t, "index": i, "tool": tool, "kind": kind, "cause": cause}
            if kind != weakness.kind:
                slip["planned"] = weakness.kind
            slips.append(slip)
            if kind == EARLY_STOP:
                stopped = True
                break
            if made is not None:
                calls.append(made)
    return turns, slips


def previous_gold_call(task: Task, t: int, i: int) -> str | None:
    """The tool of the ground-truth call before step ``i`` of turn ``t`` (in that turn, or the last call of
    the last earlier turn with calls), as :func:`simulate_one` keys compositions; None at the first call."""
    if i > 0:
        return _name(task.turns[t].ground_truth[i - 1])
    for turn in reversed(task.turns[:t]):
        if turn.ground_truth:
            return _name(turn.ground_truth[-1])
    return None


def gold_prefix_step(task: Task, t: int, i: int, spec: WeaknessSpec,
                     rng: random.Random) -> tuple[str | None, dict[str, Any] | None]:
    """What the simulated agent does at step ``i`` of turn ``t`` when everything before it is the oracle's.

    Returns the call it makes (None: no call, it answers in text) and the slip it planted (None: it made
    the ground-truth call, or stayed quiet in a turn that needs nothing).  The slip probability is the one
    :func:`simulate_one` uses, keyed on the previous ground-truth call, so a planted composition shows up
    in a gold-prefix scope exactly where it was planted.
    """
    turn = task.turns[t]
    if not turn.ground_truth:
        offered = sorted(task.offered_tools(t))
        if offered and rng.random() < spec.default.error:
            name = rng.choice(offered)
            return Call(name).render(), {"turn": t, "index": 0, "tool": name, "kind": ACTED_WITHOUT_NEED,
                                         "cause": "default"}
        return None, None
    gt = turn.ground_truth[i]
    tool = _name(gt)
    p, weakness, cause = slip_chance(spec, tool, previous_gold_call(task, t, i))
    if p <= 0.0 or rng.random() >= p:
        return gt, None
    kind, made = _apply(task, t, i, gt, weakness.kind, rng)
    slip = {"turn": t, "index": i, "tool": tool, "kind": kind, "cause": cause}
    if kind != weakness.kind:
        slip["planned"] = weakness.kind
    return made, slip


def rollout_rng(seed: int, k: int) -> random.Random:
    """The generator of rollout ``k`` of a batch seeded ``seed``."""
    return random.Random(seed * SEED_STRIDE + k)


def simulate_rollout(tasks: list[Any], k: int, spec: WeaknessSpec, seed: int, prefix: str = "sim",
                     one: Callable[..., tuple[list[Any], list[Any]]] | None = None) -> dict[str, Any]:
    """Rollout ``k`` of the batch ``simulate(tasks, n, spec, seed)``, alone; ``one(task, spec, rng)`` makes a
    task's turns and slips (BFCL's :func:`simulate_one` unless another environment gives its own)."""
    if not tasks:
        raise ConfigError("the simulated agent needs at least one task")
    rng = rollout_rng(seed, k)
    task = tasks[rng.randrange(len(tasks))]
    turns, slips = (one or simulate_one)(task, spec, rng)
    return {
        "rollout_id": f"{prefix}-{seed}-{k}",
        "task_id": task.id,
        "turns": turns,
        "meta": {"policy": "sim", "seed": seed, "index": k, "slips": slips},
    }


def simulate(tasks: list[Task], n: int, spec: WeaknessSpec, seed: int, prefix: str = "sim",
             one: Callable[..., tuple[list[Any], list[Any]]] | None = None) -> Iterator[dict[str, Any]]:
    """``n`` rollout dicts ``{rollout_id, task_id, turns, meta}`` from the simulated agent (``one``: as in
    :func:`simulate_rollout`)."""
    if n < 0:
        raise ConfigError(f"the number of rollouts must be >= 0, not {n}")
    tasks = list(tasks)
    for k in range(n):
        yield simulate_rollout(tasks, k, spec, seed, prefix, one=one)


__all__ = [
    "KINDS",
    "Weakness",
    "WeaknessSpec",
    "gold_prefix_step",
    "load_weakness",
    "parse_weakness",
    "rollout_rng",
    "simulate",
    "simulate_one",
    "simulate_rollout",
    "slip_chance",
]
