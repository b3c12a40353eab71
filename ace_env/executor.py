"""The safe executor: run parsed calls against fresh, per-rollout API instances.

Guarantees:

* Only a bare function name that is offered in the current turn is
  dispatched, to a public method of this rollout's own instance, or to a
  wrong-way twin the task offers (:mod:`ace_env.twins`: ACE's own function,
  run on the same instance as its real tool); nothing is evaluated (calls
  come from :mod:`ace_env.calls`).
* Every rollout gets fresh instances loaded from its own copy of the task's
  initial configuration, so no rollout sees another's state.
* Mutable default arguments (``TwitterAPI.post_tweet(tags=[], mentions=[])``,
  whose shared lists ``mention()`` extends) are replaced by fresh copies on
  every call, so state cannot leak through them either.
* A failing call is a result, not a crash: its output is the same
  ``"Error during execution: ..."`` string BFCL's checker records (rendering
  the result is part of the call, as in BFCL: an int over Python's 4,300-digit
  string limit is an error output, not a crash).
* A call that runs out of memory raises :class:`BudgetExceeded`, which ends
  the rollout with attribution ``resource_limit``; the wall-clock budget is
  enforced from outside by :mod:`ace_env.worker`, which reads the call clock
  this module keeps (:func:`set_call_clock`).
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import pickle
import time
from dataclasses import dataclass, field
from typing import Any

from ace_env import bfcl, twins
from ace_env.calls import Call, MalformedCall, parse_call
from ace_env.errors import BudgetExceeded
from ace_env.tasks import Task
from ace_env.views import ViewState

OK = "ok"  # executed and returned
ERROR = "error"  # executed and raised; output holds the error text
MALFORMED = "malformed"  # not a call ACE accepts; not executed
NOT_OFFERED = "not_offered"  # a name that is not offered in this turn; not executed
DISTRACTOR = "distractor"  # an offered BFCL function declared wrong (not a twin); not executed


#: Where the executor stamps the start of each tool call (``clock[0]``, time.monotonic())
#: and clears it (0.0) after, and counts the calls started (in the array's last slot); a
#: watchdog in another process reads both.  None: no stamping.
_CALL_CLOCK: Any = None
_CALL_COUNT = 0  # the slot of _CALL_CLOCK that counts calls


def set_call_clock(clock: Any) -> None:
    """Stamp every tool call's start into ``clock[0]`` and count calls in its last slot (a shared
    double array of at least 2 slots), or stop with None."""
    global _CALL_CLOCK, _CALL_COUNT
    _CALL_CLOCK = clock
    _CALL_COUNT = len(clock) - 1 if clock is not None else 0


@dataclass
class StepResult:
    """What happened to one call of a rollout."""

    raw: Any
    status: str
    name: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    output: str | None = None
    detail: str = ""
    #: False for a call to a tool not offered in its turn that was executed anyway (BFCL's checker's rule).
    offered: bool = True

    @property
    def executed(self) -> bool:
        return self.status in (OK, ERROR)


def copy_json(value: Any) -> Any:
    """Copy JSON-like data (dict/list/scalars) much faster than ``deepcopy``."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return copy.deepcopy(value)


def _scalars(values: Any) -> bool:
    return all(v is None or type(v) in (str, int, float, bool) for v in values)


def stringify(result: Any) -> str:
    """Render a tool's return value exactly as BFCL's checker does."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except (TypeError, ValueError):
            return str(result)
    return str(result)


@functools.cache
def _signature(class_name: str, method: str) -> tuple[inspect.Signature, tuple[tuple[str, Any], ...]]:
    """The method's signature without ``self``, and its mutable defaults as declared."""
    sig = bfcl.method_signature(class_name, method)
    shared = [p for p in sig.parameters.values() if isinstance(p.default, (list, dict, set, bytearray))]
    # Reading the source is slow: only for the few methods that have a mutable default.
    declared = _declared_defaults(getattr(bfcl.api_class(class_name), method)) if shared else {}
    return sig, tuple((p.name, declared.get(p.name, p.default)) for p in shared)


def _declared_defaults(fn: Any) -> dict[str, Any]:
    """Default values as written in the source, immune to earlier in-place mutation.

    A shared default list may already have been extended (by BFCL's own checker
    running in the same process, say), so ACE reads the literal from the
    function's source instead of trusting the live object.
    """
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return {}
    node = tree.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {}
    positional = node.args.posonlyargs + node.args.args
    pairs = list(zip(positional[len(positional) - len(node.args.defaults):], node.args.defaults))
    pairs += [(a, d) for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if d is not None]
    out = {}
    for arg, default in pairs:
        try:
            out[arg.arg] = ast.literal_eval(default)
        except ValueError:
            continue
    return out


def canonical_arguments(name: str, call: Call) -> dict[str, Any] | None:
    """Arguments by parameter name with defaults filled in, or None if they don't bind.

    ``sort('f')`` and ``sort(file_name='f')`` have the same canonical arguments.
    Results are cached per call: treat the returned dict as read-only.
    """
    return _canonical(name, call)


@functools.lru_cache(maxsize=65_536)
def parse_with_arguments(raw: str) -> tuple[Call | MalformedCall, dict[str, Any] | None]:
    """``parse_call`` and ``canonical_arguments`` of a call string, cached (read-only results)."""
    parsed = parse_call(raw)
    if isinstance(parsed, MalformedCall):
        return parsed, None
    return parsed, canonical_arguments(parsed.name, parsed)


def _canonical(name: str, call: Call) -> dict[str, Any] | None:
    info = twins.all_functions().get(name)
    if info is None:
        return None
    sig, mutable = _signature(info.class_name, _method_of(name))
    try:
        bound = sig.bind(*call.args, **call.kwargs)
    except TypeError:
        return None
    return _with_defaults(sig, mutable, bound.arguments)


def _with_defaults(
    sig: inspect.Signature, mutable: tuple[tuple[str, Any], ...], given: dict[str, Any]
) -> dict[str, Any]:
    """All parameters in signature order: given values, else declared defaults (copied)."""
    declared = dict(mutable)
    out = {}
    for pname, param in sig.parameters.items():
        if pname in given:
            out[pname] = given[pname]
        elif pname in declared:
            out[pname] = copy.deepcopy(declared[pname])
        elif param.default is not inspect.Parameter.empty:
            out[pname] = param.default
    return out


def _method_of(name: str) -> str:
    """The BFCL method whose signature a call of ``name`` binds to (a twin's real tool, else itself)."""
    twin = twins.TWINS.get(name)
    return twin.real if twin is not None else name


@functools.lru_cache(maxsize=4096)
def _owners(tools: tuple[str, ...], classes: tuple[str, ...]) -> dict[str, str]:
    info = twins.all_functions()
    return {name: info[name].class_name for name in tools if name in info and info[name].class_name in classes}


class RolloutState:
    """Fresh instances of a task's classes, owned by one rollout (BFCL's executor: one rollout's state; an
    environment, the benchmark, is an :class:`ace_env.environments.ToolEnvironment`)."""

    def __init__(self, task: Task, checkpoint: bytes | None = None):
        """Load fresh instances, or restore them from a :meth:`checkpoint`."""
        self.task = task
        self.instances: dict[str, Any] = {}
        self.views = ViewState(task.output_views)
        if checkpoint is not None:
            self.instances, self.views.counts = restore(checkpoint)
        self._owner = _owners(tuple(task.tools), tuple(task.involved_classes))
        for class_name in task.involved_classes if checkpoint is None else ():
            instance = bfcl.api_class(class_name)()
            if not bfcl.is_stateless(class_name):
                config = copy_json(task.initial_config.get(class_name, {}))
                instance._load_scenario(config, long_context=task.long_context)
            self.instances[class_name] = instance

    def offered(self, turn_index: int) -> frozenset[str]:
        """Tools offered in a turn."""
        return self.task.offered_tools(turn_index)

    def call(self, raw: Any, turn_index: int, run_not_offered: bool = False) -> StepResult:
        """Parse and, if allowed, execute one call in turn ``turn_index``.

        ``run_not_offered``: a tool of the task's classes that is not offered in this turn is executed anyway
        (``offered`` False), as BFCL's checker executes whatever the model calls; without it, it is refused."""
        if isinstance(raw, str) and len(raw) <= 4096:
            parsed, arguments = parse_with_arguments(raw)
        else:
            parsed = parse_call(raw)
            arguments = None if isinstance(parsed, MalformedCall) else canonical_arguments(parsed.name, parsed)
        if isinstance(parsed, MalformedCall):
            return StepResult(raw=parsed.raw, status=MALFORMED, detail=parsed.reason)
        shown = raw if isinstance(raw, str) else parsed.render()
        offered = parsed.name in self.offered(turn_index)
        if (not offered and not (run_not_offered and parsed.name not in self.task.distractors)) \
                or parsed.name not in self._owner:
            return StepResult(
                raw=shown,
                status=NOT_OFFERED,
                name=parsed.name,
                arguments=dict(parsed.kwargs),
                detail=f"{parsed.name!r} is not offered in turn {turn_index}",
            )
        if parsed.name in self.task.distractors and not twins.is_twin(parsed.name):
            return StepResult(
                raw=shown,
                status=DISTRACTOR,
                name=parsed.name,
                arguments=dict(arguments or parsed.kwargs),
                detail=f"{parsed.name!r} is a distractor: it looks right but points the wrong way",
            )
        step = self._execute(shown, parsed, arguments)
        step.offered = offered
        return step

    def _execute(self, shown: str, call: Call, arguments: dict[str, Any] | None) -> StepResult:
        class_name = self._owner[call.name]
        instance = self.instances[class_name]
        # A twin (ACE's own function) runs on the instance of its real tool's class, with its real tool's signature.
        method = twins.bound(call.name, instance) if twins.is_twin(call.name) else getattr(instance, call.name)
        sig, mutable = _signature(class_name, _method_of(call.name))
        # Parsed calls are cached and shared: tools get their own copy of every argument.
        args = call.args if _scalars(call.args) else tuple(copy_json(list(call.args)))
        kwargs = dict(call.kwargs) if _scalars(call.kwargs.values()) else copy_json(call.kwargs)
        if arguments is None:
            arguments = dict(call.kwargs)
        clock = _CALL_CLOCK
        if clock is not None:
            clock[0] = time.monotonic()
            clock[_CALL_COUNT] += 1
        try:
            if not mutable:
                # A call that doesn't bind raises its own TypeError, as BFCL's checker records it.
                result = method(*args, **kwargs)
            else:
                try:
                    bound = sig.bind(*args, **kwargs)
                except TypeError:
                    bound = None
                if bound is not None:
                    for pname, default in mutable:
                        if pname not in bound.arguments:
                            bound.arguments[pname] = copy.deepcopy(default)
                    args, kwargs = bound.args, bound.kwargs
                result = method(*args, **kwargs)
            # Rendering is part of the call, as in BFCL: str() of an int over
            # 4,300 digits raises ValueError, which becomes the call's error output.
            # The task's output view (if any) decides how the agent reads the result; state is untouched.
            output = stringify(self.views.show(call.name, result))
        except MemoryError as e:
            raise BudgetExceeded("resource_limit", f"{call.name} ran out of memory") from e
        except Exception as e:  # a tool's failure is the agent's observation, not ACE's crash
            return StepResult(shown, ERROR, call.name, arguments, f"Error during execution: {e}")
        finally:
            if clock is not None:
                clock[0] = 0.0
        return StepResult(shown, OK, call.name, arguments, output)

    def checkpoint(self) -> bytes:
        """The complete state of every instance (private attributes included), as bytes.

        Restoring it builds new, independent instances that behave exactly as
        these would from here on (seeded random generators included).
        """
        return pickle.dumps((self.instances, dict(self.views.counts)), protocol=pickle.HIGHEST_PROTOCOL)

    def public_state(self) -> dict[str, dict[str, Any]]:
        """Every instance's public attributes (live objects; copy before keeping)."""
        return {
            cls: {k: v for k, v in vars(inst).items() if not k.startswith("_")}
            for cls, inst in self.instances.items()
        }


def restore(checkpoint: bytes) -> tuple[dict[str, Any], dict[str, int]]:
    """The instances and the output views' call counts stored by :meth:`RolloutState.checkpoint`."""
    instances, counts = pickle.loads(checkpoint)
    return instances, dict(counts)

