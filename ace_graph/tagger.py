"""The deterministic skill tagger: which skills each oracle or rollout step exercises.

Every oracle step of a task gets the base skills of its tool (from
``skills.toml``) plus skills that depend on how it was reached:

* an argument whose value appears in the user's words (this turn or earlier)
  adds ``param_from_user``;
* an argument whose value equals, or is contained in, an earlier step's output
  and is *not* in the user's words adds ``param_from_output`` and makes the
  step depend on the producer (``data_flow``); the producer gets
  ``result_extraction``;
* counterfactual replay: the task's ground truth is replayed with step ``i``
  removed (through :class:`ace_env.executor.RolloutState`, never ``eval``); every
  later step whose output then changes depends on ``i``.  Such a dependency is
  ``data_flow`` when the step's arguments carry a value from ``i``'s output,
  else ``precondition`` (and the step gets ``state_precondition``);
* a turn whose ground truth is empty is one ``abstain`` pseudo-step.

Two refinements keep replay dependencies about state, not bookkeeping: the
removed step's draws from the instances' seeded random generators are kept
(so later random ids and readings do not shift), and an output that differs
only in id fields (the next order number, say) is not counted as a change.

Trivial values (booleans, None, empty strings, the integers 0-2) never count as
matches, except a small integer passed to an ``*id*`` parameter that equals an
``*id*`` field of an earlier output (tweet ids start at 0).
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ace_env.cache import TaskCache
from ace_env.calls import Call, parse_call
from ace_env.environments import environment_of, own_tool_skills
from ace_env.executor import ERROR, OK, RolloutState
from ace_env.oracle import ORACLE_SALT, ORACLE_SOURCES, Oracle, oracle_for, tool_signature
from ace_env.tasks import Task
from ace_env.values import TRIVIAL_NUMBERS, is_trivial, leaves, number
from ace_graph.errors import ConfigError
from ace_graph.taxonomy import tool_skills

ABSTAIN = "abstain"
PARAM_FROM_USER = "param_from_user"
PARAM_FROM_OUTPUT = "param_from_output"
RESULT_EXTRACTION = "result_extraction"
STATE_PRECONDITION = "state_precondition"

DATA_FLOW = "data_flow"
PRECONDITION = "precondition"

USER, OUTPUT, LITERAL, DEFAULT = "user", "output", "literal", "default"

#: Output text longer than this is not scanned for contained values (long-context dumps).
_MAX_SCAN_CHARS = 200_000


@dataclass(frozen=True)
class OracleStepTag:
    """Skills and dependencies of one oracle step (or of an abstain pseudo-step)."""

    flat: int  # index in the flat list of the task's oracle steps (abstain steps included)
    turn: int  # user turn index
    index: int  # index within the turn's ground truth (0 for an abstain step)
    tool: str | None  # function name; None for an abstain pseudo-step
    skills: tuple[str, ...]  # sorted, unique, known skill ids, never empty
    arg_sources: dict[str, str] = field(hash=False)  # argument -> user | output | literal | default
    depends_on: tuple[int, ...] = ()  # flat indices of earlier steps this one depends on
    dependency_kinds: tuple[str, ...] = ()  # parallel to depends_on: data_flow | precondition


# --------------------------------------------------------------------------- values


_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def _numbers_in(text: str) -> frozenset[float]:
    return frozenset(float(m) for m in _NUMBER.findall(_THOUSANDS.sub("", text)))


@functools.lru_cache(maxsize=65_536)
def _word_pattern(needle: str) -> re.Pattern[str]:
    before = r"(?<![a-z0-9_])" if needle[:1].isalnum() else ""
    after = r"(?![a-z0-9_])" if needle[-1:].isalnum() else ""
    return re.compile(before + re.escape(needle) + after)


def _contains(haystack: str, needle: str) -> bool:
    return needle in haystack and _word_pattern(needle).search(haystack) is not None


def _decimals(n: float) -> int:
    text = repr(n)
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


@dataclass(frozen=True)
class _Text:
    """A text (user words or a tool output) prepared for value matching."""

    text: str  # lower-cased
    strings: frozenset[str]  # lower-cased string leaves (and dict keys) of a structured output
    numbers: frozenset[float]  # numeric leaves and number tokens
    id_numbers: frozenset[float]  # numbers stored under a key containing "id"

    def has_string(self, s: str, exact_only: bool) -> bool:
        s = s.strip().lower()
        if s in self.strings:
            return True
        if exact_only and len(s) < 3:
            return False
        return len(self.text) <= _MAX_SCAN_CHARS and _contains(self.text, s)

    def has_number(self, n: float) -> bool:
        if n in self.numbers or abs(n) in self.numbers:
            return True
        d = _decimals(n)
        if d and d <= 4:  # a value rounded from a longer one (45.68 from 45.6789)
            return any(abs(round(x, d) - n) < 1e-9 for x in self.numbers if not x.is_integer())
        return False


def _user_text(text: str) -> _Text:
    low = text.lower()
    return _Text(low, frozenset(), _numbers_in(low), frozenset())


def _output_text(output: str) -> _Text:
    low = output.lower()
    strings: set[str] = set()
    numbers: set[float] = set()
    ids: set[float] = set()
    parsed = _parse_output(output)

    def walk(value: Any, key: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if isinstance(k, str):
                    strings.add(k.strip().lower())
                walk(v, str(k).lower())
        elif isinstance(value, (list, tuple, set, frozenset)):
            for v in value:
                walk(v, key)
        elif isinstance(value, str):
            strings.add(value.strip().lower())
        else:
            n = number(value)
            if n is not None:
                numbers.add(n)
                if "id" in key:
                    ids.add(n)

    if parsed is not None:
        walk(parsed, "")
    else:
        strings.add(low.strip())
    if len(low) <= _MAX_SCAN_CHARS:
        numbers.update(_numbers_in(low))
    return _Text(low, frozenset(strings), frozenset(numbers), frozenset(ids))


def _parse_output(output: str) -> Any:
    text = output.strip()
    if not text or text[0] not in "{[(":
        return None
    try:
        return json.loads(text)
    except ValueError:
        pass
    if len(text) > _MAX_SCAN_CHARS:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _in_user(value: Any, user: _Text) -> bool:
    if isinstance(value, str):
        return user.has_string(value, exact_only=False) if len(value.strip()) >= 3 else _contains(
            user.text, value.strip().lower()
        )
    n = number(value)
    return n is not None and user.has_number(n)


def _in_output(value: Any, param: str, out: _Text) -> bool:
    if isinstance(value, str):
        return out.has_string(value, exact_only=True)
    n = number(value)
    if n is None:
        return False
    if n in TRIVIAL_NUMBERS:  # trivial unless it is an id the output handed out
        return "id" in param.lower() and n in out.id_numbers
    return out.has_number(n)


def _matchable(value: Any, param: str) -> bool:
    if not is_trivial(value):
        return True
    n = number(value)
    return n is not None and "id" in param.lower()


# --------------------------------------------------------------------------- calls


def _explicit(name: str, raw: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments the call gave explicitly (by parameter name)."""
    parsed = parse_call(raw) if isinstance(raw, (str, dict)) else None
    sig = tool_signature(name)
    if isinstance(parsed, Call) and sig is not None:
        try:
            return dict(sig.bind_partial(*parsed.args, **parsed.kwargs).arguments)
        except TypeError:
            pass
    return dict(arguments)


def _dependencies(own: set[str], src: dict[str, str], latest: Any, matching: Any, changed: Any,
                  skills: list[set[str]]) -> dict[int, str]:
    """A step's dependency kinds on earlier steps (data flow, or a state precondition: an earlier call changed
    state the step reads); adds the step's provenance skills to ``own`` and result extraction to the steps it
    reads from."""
    if USER in src.values():
        own.add(PARAM_FROM_USER)
    if OUTPUT in src.values():
        own.add(PARAM_FROM_OUTPUT)
    kinds = {k: DATA_FLOW for k in latest}
    for i in changed:
        kinds[i] = DATA_FLOW if i in matching else PRECONDITION
    if PRECONDITION in kinds.values():
        own.add(STATE_PRECONDITION)
    for k, kind in kinds.items():
        if kind == DATA_FLOW:
            skills[k].add(RESULT_EXTRACTION)
    return kinds


def _provenance(
    name: str,
    raw: Any,
    arguments: dict[str, Any],
    user: _Text,
    outputs: Sequence[tuple[int, _Text]],
) -> tuple[dict[str, str], set[int], set[int]]:
    """Argument sources, the latest producer of each output-sourced value, and every matching producer."""
    given = _explicit(name, raw, arguments)
    sources: dict[str, str] = {}
    latest: set[int] = set()
    matching: set[int] = set()
    for param in list(arguments) + [p for p in given if p not in arguments]:
        if param not in given:
            sources[param] = DEFAULT
            continue
        source = LITERAL
        for leaf in leaves(given[param]):
            if not _matchable(leaf, param):
                continue
            if not is_trivial(leaf) and _in_user(leaf, user):
                source = USER if source == LITERAL else source
                continue
            producers = [k for k, out in outputs if _in_output(leaf, param, out)]
            if producers:
                source = OUTPUT
                latest.add(max(producers))
                matching.update(producers)
        sources[param] = source
    return sources, latest, matching


# --------------------------------------------------------------------------- oracle tags

def _user_texts(task: Task) -> list[_Text]:
    """Cumulative user words up to and including each turn."""
    out, parts = [], []
    for turn in task.turns:
        parts.extend(m.get("content", "") or "" for m in turn.user if m.get("role") == "user")
        out.append(_user_text("\n".join(parts)))
    return out


def tag_task(task: Task, fingerprint: str | None = None) -> tuple[OracleStepTag, ...]:
    """Tags of every oracle step of a task, in flat order.

    Cached by the task's content fingerprint (pass it if known), in memory and
    on disk (:mod:`ace_env.cache`); a ``gold-actions`` task's (τ²'s: :func:`_tag_gold_actions`) in memory only.
    """
    return _TAGGERS[environment_of((task,)).tagging](task, fingerprint)


def _gold_action_tags(task: Any, fingerprint: str | None) -> tuple[OracleStepTag, ...]:
    fp = fingerprint or task.fingerprint()
    hit = _GOLD_ACTION_TAGS.get(fp)
    if hit is None:
        hit = _GOLD_ACTION_TAGS[fp] = _tag_gold_actions(task)
    return hit


_GOLD_ACTION_TAGS: dict[str, tuple[OracleStepTag, ...]] = {}
#: How a task's steps are tagged, by its environment's ``tagging`` (:class:`ace_env.environments.ToolEnvironment`):
#: ``oracle`` (each turn's gold executed; cached on disk), ``gold-actions`` (the gold agent actions, in memory).
_TAGGERS: dict[str, Callable[[Any, str | None], tuple[OracleStepTag, ...]]] = {
    "oracle": lambda task, fp: TAGS.get(task, fp),
    "gold-actions": _gold_action_tags,
}


def base_skills() -> dict[str, tuple[str, ...]]:
    """Every tool's base skills: ``ace_graph/skills.toml``'s ``[tools]`` and each environment's own
    ``tool_skills`` (:func:`ace_env.environments.own_tool_skills`)."""
    return tool_skills(own=own_tool_skills())


def clear_cache() -> None:
    """Forget the tags held in memory (the disk cache stays)."""
    TAGS.clear()
    _GOLD_ACTION_TAGS.clear()


def _tag_task(task: Task) -> tuple[OracleStepTag, ...]:
    return _tag_with_oracle(task, oracle_for(task))


def _tag_with_oracle(task: Task, oracle: Oracle) -> tuple[OracleStepTag, ...]:
    base = base_skills()
    users = _user_texts(task)
    # flat layout: (turn, index, step or None)
    layout: list[tuple[int, int, Any]] = []
    for t, turn in enumerate(oracle.turns):
        if not turn.steps:
            layout.append((t, 0, None))
        layout.extend((t, i, s) for i, s in enumerate(turn.steps))
    changed = _counterfactual(task, oracle, layout)
    outputs: list[tuple[int, _Text]] = []
    skills: list[set[str]] = []
    sources: list[dict[str, str]] = []
    deps: list[dict[int, str]] = []
    for flat, (t, _, step) in enumerate(layout):
        if step is None:
            skills.append({ABSTAIN})
            sources.append({})
            deps.append({})
            continue
        own = set(base.get(step.name, ()))
        src, latest, matching = _provenance(step.name, step.call, step.arguments, users[t], outputs)
        kinds = _dependencies(own, src, latest, matching, changed.get(flat, ()), skills)
        skills.append(own)
        sources.append(src)
        deps.append(kinds)
        if step.status in (OK, ERROR):
            outputs.append((flat, _output_text(step.output)))
    tags = []
    for flat, (t, i, step) in enumerate(layout):
        order = sorted(deps[flat])
        if not skills[flat]:
            raise ConfigError(
                f"Tool {step.name!r} (task {task.id}, turn {t}) has no skills in the taxonomy. "
                "Map it to its base skills under [tools] in ace_graph/skills.toml."
            )
        tags.append(
            OracleStepTag(
                flat=flat,
                turn=t,
                index=i,
                tool=None if step is None else step.name,
                skills=tuple(sorted(skills[flat])),
                arg_sources=sources[flat],
                depends_on=tuple(order),
                dependency_kinds=tuple(deps[flat][k] for k in order),
            )
        )
    return tuple(tags)


def _tag_gold_actions(task: Any) -> tuple[OracleStepTag, ...]:
    """Tags of a task's oracle steps read through its environment's ``steps`` (:mod:`ace_env.steps`; τ²'s,
    a toy's): its gold agent actions, in order, all in turn 0.

    The same rules as BFCL's: base skills from the taxonomy (and the environment's own ``tool_skills``);
    ``param_from_user`` for an argument found in the user's words (τ²: the scenario, all the user knows),
    ``param_from_output`` and a ``data_flow`` dependency for one found in an earlier gold output and not
    there; counterfactual replay (the gold without action ``i``) for the rest (``precondition``,
    ``state_precondition``).  A task without gold agent actions is one ``abstain`` step.
    """
    env = environment_of((task,))
    if env.steps is None:
        raise ConfigError(f"the {env.name} environment tags gold actions but reads no steps: give its "
                          "ToolEnvironment a `steps` reader (ace_env/steps.py)")
    run = env.steps(task, None)
    gold = run.steps
    if not gold:
        return (OracleStepTag(0, 0, 0, None, (ABSTAIN,), {}),)
    base = base_skills()
    user = _user_text(run.user)
    changed: dict[int, set[int]] = defaultdict(set)
    for r in range(len(gold) - 1):
        without = env.steps(task, r).steps
        for j in range(r + 1, len(gold)):
            new, old = without[j], gold[j]
            if new is not None and old is not None and (new.error != old.error
                                                         or _material_change(new.output, old.output)):
                changed[j].add(r)
    outputs: list[tuple[int, _Text]] = []
    skills: list[set[str]] = []
    tags = []
    for j, a in enumerate(gold):
        if a is None:
            raise ConfigError(f"the {env.name} environment's gold run of task {task.id} lacks step {j}")
        own = set(base.get(a.name, ()))
        if not own:
            raise ConfigError(f"Tool {a.name!r} (task {task.id}) has no skills in the taxonomy. "
                              "Map it to its base skills under [tools] in ace_graph/skills.toml, or in its "
                              "environment's tool_skills.")
        src, latest, matching = _provenance(a.name, None, dict(a.arguments), user, outputs)
        kinds = _dependencies(own, src, latest, matching, changed.get(j, ()), skills)
        skills.append(own)
        outputs.append((j, _output_text(a.output)))
        order = sorted(kinds)
        tags.append((j, a.name, src, tuple(order), tuple(kinds[k] for k in order)))
    return tuple(OracleStepTag(flat=j, turn=0, index=j, tool=name, skills=tuple(sorted(skills[j])), arg_sources=src,
                               depends_on=order, dependency_kinds=dep_kinds)
                 for j, name, src, order, dep_kinds in tags)


def _counterfactual(task: Task, oracle: Oracle, layout: list[tuple[int, int, Any]]) -> dict[int, set[int]]:
    """For every later step, the earlier steps whose removal changes its output."""
    flat_of = {(t, i): flat for flat, (t, i, s) in enumerate(layout) if s is not None}
    changed: dict[int, set[int]] = defaultdict(set)
    for flat, (t0, i0, removed) in enumerate(layout):
        if removed is None or flat == len(layout) - 1:
            continue
        start = oracle.turns[t0 - 1].checkpoint if t0 else (oracle.initial or None)
        env = RolloutState(task, start)
        for step in oracle.turns[t0].steps[:i0]:
            env.call(step.call, t0)
        # Run the removed step on a copy only to learn its random draws, then drop its effects.
        before = env.checkpoint()
        env.call(removed.call, t0)
        draws = _random_states(env)
        env = RolloutState(task, before)
        _restore_random(env, draws)
        for t in range(t0, len(oracle.turns)):
            steps = oracle.turns[t].steps
            for i in range(i0 + 1 if t == t0 else 0, len(steps)):
                r = env.call(steps[i].call, t)
                if r.status != steps[i].status or _material_change(r.output or "", steps[i].output):
                    changed[flat_of[(t, i)]].add(flat)
    return changed


def _random_states(env: RolloutState) -> dict[str, Any]:
    return {
        cls: inst._random.getstate()
        for cls, inst in env.instances.items()
        if hasattr(getattr(inst, "_random", None), "getstate")
    }


def _restore_random(env: RolloutState, states: dict[str, Any]) -> None:
    for cls, state in states.items():
        env.instances[cls]._random.setstate(state)


def _material_change(new: str, old: str) -> bool:
    """Whether two outputs differ in more than id fields."""
    if new == old:
        return False
    a, b = _parse_output(new), _parse_output(old)
    if not isinstance(a, dict) or not isinstance(b, dict) or a.keys() != b.keys():
        return True
    return any(a[k] != b[k] for k in a if "id" not in str(k).lower())


_HERE = Path(__file__).parent

#: Oracle tags by task content: 4,096 in memory, all on disk.  Keyed also by the
#: code that computes them (this module, the taxonomy, the oracle's code).
TAGS: TaskCache[tuple[OracleStepTag, ...]] = TaskCache(
    "tags",
    _tag_task,
    maxsize=4096,
    sources=(_HERE / "tagger.py", _HERE / "taxonomy.py", _HERE / "skills.toml", *ORACLE_SOURCES),
    salt=ORACLE_SALT,
)


# --------------------------------------------------------------------------- rollouts


def tag_rollout_steps(task: Task, verdict: Any) -> list[list[tuple[str, ...]]]:
    """Skills of every step of a verified rollout, shaped like ``verdict.steps``.

    A step gets its tool's base skills plus the skills of its argument
    provenance, computed against the rollout's own earlier outputs and the
    task's user words; a producer whose output a later step consumed gets
    ``result_extraction``.  Malformed and not-offered steps get ``()``.
    """
    base = base_skills()
    users = _user_texts(task)
    outputs: list[tuple[int, _Text]] = []
    flat_skills: list[set[str] | None] = []
    shape: list[int] = []
    for t, steps in enumerate(verdict.steps):
        shape.append(len(steps))
        user = users[min(t, len(users) - 1)] if users else _user_text("")
        for s in steps:
            if s.status not in (OK, ERROR) or not s.name or s.name not in base:
                flat_skills.append(None)
                continue
            own = set(base[s.name])
            src, latest, _ = _provenance(s.name, s.raw, s.arguments or {}, user, outputs)
            if USER in src.values():
                own.add(PARAM_FROM_USER)
            if OUTPUT in src.values():
                own.add(PARAM_FROM_OUTPUT)
            for k in latest:
                produced = flat_skills[k]
                if produced is not None:
                    produced.add(RESULT_EXTRACTION)
            outputs.append((len(flat_skills), _output_text(s.output or "")))
            flat_skills.append(own)
    out: list[list[tuple[str, ...]]] = []
    pos = 0
    for n in shape:
        out.append([tuple(sorted(s)) if s is not None else () for s in flat_skills[pos : pos + n]])
        pos += n
    return out


__all__ = [
    "ABSTAIN",
    "DATA_FLOW",
    "PRECONDITION",
    "OracleStepTag",
    "TAGS",
    "base_skills",
    "clear_cache",
    "tag_rollout_steps",
    "tag_task",
]
