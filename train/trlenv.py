"""ACE's tasks as environments for TRL's ``GRPOTrainer(environment_factory=...)``.

TRL 1.16's environment contract (read from ``trl/trainer/grpo_trainer.py``):

* a factory (a class) is called with no argument; TRL keeps a pool of
  instances and calls ``reset(**row)`` with every column of the dataset row
  before each rollout (a string it returns is appended to the last user
  message; ACE's returns None: the row's ``prompt`` already holds the turn);
* every public method of the class other than ``reset`` and ``get_reward``
  is a tool: its name, type hints and Google-style docstring become the tool
  schema in the prompt, and a ``<tool_call>`` the model writes calls it with
  the arguments as keywords; what it returns is the tool message;
* ``get_reward()`` (no argument), when defined, scores the finished rollout
  from the environment's own state, as one more reward source (weight 1).

Because the tools are methods of the class, each tool set needs its own
class: :func:`environment_class` builds (once per set of BFCL function names)
a subclass of :class:`TrlToolEnv` whose methods are those functions, each
calling ACE's safe executor (:class:`ace_env.executor.RolloutState`) on the
row's task, in the turn being played, exactly as ``ace rollout`` does (a call
that is not offered, malformed or a distractor is not executed; its tool
message says why).  The TRL export (``ace export --format trl``) names each
row's turn-0 tool set in its ``environment`` column, and
:func:`environment_factories` maps those names to their classes: pass its
result as ``environment_factory`` (TRL's dict form routes each row by its
``environment`` column and lists only that class's tools in its prompt).

Model output is data, and a call is bounded: every tool call runs in a
watched worker process (:class:`ace_env.boundedcalls.BoundedCalls`, the rollout
engine's mechanism) under :attr:`TrlToolEnv.budget`, never in the
trainer's process; a call over budget (``power(base=10,
exponent=1000000000)``) ends the rollout with ``timeout`` or
``resource_limit`` (reward 0), and later calls answer that it has ended.

The verdict is ACE's verifier, bounded the same way
(:class:`ace_env.bounded.BoundedVerifier`), over the calls the environment
executed, on the task cut to the turns played; ``get_reward``
returns its reward (1.0 or 0.0), so ``reward_funcs`` may be omitted.  TRL
sums its reward sources: passing :func:`train.rewards.verifier_reward` as
well counts the same verdict twice (the test does, to check that the two
agree).  TRL logs the environment's reward once per class, so per tool set
(``rewards/TrlToolEnv_<digest>``).  The verdict itself (attribution,
failing step) is the ``verdict`` property, which a custom reward function can
read from the ``environments`` keyword TRL passes.

Wiring it into TRL (what ``tests/unit/test_environment.py`` runs, with a tiny
model on a CPU)::

    data = datasets.load_dataset("json", data_files="runs/trl/train.jsonl", split="train")
    tokenizer = prepare_tokenizer(AutoTokenizer.from_pretrained(model_dir))
    trainer = GRPOTrainer(model=model_dir, args=GRPOConfig(...), train_dataset=data,
                          processing_class=tokenizer, environment_factory=environment_factories(data))

What TRL's environment mode cannot do: put a user turn between two assistant
turns.  Its tool loop (``_tool_call_loop``) ends a rollout when the model
answers without a tool call (or after ``max_tool_calling_iterations``) and has
no hook to send the next user message, so through TRL an ACE task is played
on its first turn (the export's ``prompt``) and graded on that turn.  Later
turns are in the export's ``turns`` column for consumers that drive the
conversation themselves (``ace train grpo`` does, with TRL's ``rollout_func``;
see :mod:`train.grpo`).  Calls TRL refuses before reaching the environment (a
tool name the class does not have, calls left when the iteration cap is hit)
are invisible to ``get_reward``; :func:`train.rewards.verifier_reward` grades
the completion's calls and sees them.

A model whose chat template has no tool section gets ACE's Hermes template,
and TRL needs to know how to read its tool calls back:
:func:`prepare_tokenizer` does both.

>>> import json
>>> from ace_env.bfcl import load_tasks
>>> from train.export import to_trl
>>> row = to_trl(load_tasks("base")[1])       # one row of `ace export --format trl`
>>> Env = environment_factories([row])[row["environment"]]
>>> env = Env()
>>> env.reset(**row)                          # what GRPOTrainer does before a rollout
>>> "ls" in dir(env) and env.ls.__doc__.splitlines()[0]
'List the contents of the current directory.'
>>> print(env.ls(a=True))                     # the model's <tool_call> {"name": "ls", "arguments": {"a": true}}
{"current_directory_content": [...]}
>>> env.get_reward(), env.verdict.attribution  # the first turn's ground truth is ls(a=True)
(1.0, None)
>>> env.reset(**row)                          # the next rollout starts afresh
>>> print(env.pwd())
{"current_working_directory": "/alex"}
>>> env.get_reward(), env.verdict.attribution
(0.0, 'wrong_tool')
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ace_env import twins
from ace_env.bounded import BoundedVerifier, LineError
from ace_env.boundedcalls import BoundedCalls, Overrun
from ace_env.errors import ConfigError
from ace_env.tasks import Task
from ace_env.verifier import Verdict, over_budget
from ace_env.worker import Budget
from train.errors import EnvironmentUseError
from train.policies.template import ACE_CHAT_TEMPLATE, has_tool_support
from train.rewards import STRICT, reward_of, task_prefix

log = logging.getLogger(__name__)

#: JSON-schema type -> the Python type hint transformers turns back into that type.
_HINTS: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict}

#: How transformers' ``parse_response`` reads an assistant message in ACE's Hermes template
#: (``<tool_call>{json}</tool_call>`` blocks, then ``<|im_end|>``); TRL needs it to find tool calls.
ACE_RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}


def prepare_tokenizer(tokenizer: Any) -> Any:
    """Give ``tokenizer`` ACE's tool template when its own has no tool section, and a response parser for it."""
    if not has_tool_support(tokenizer.chat_template or ""):
        tokenizer.chat_template = ACE_CHAT_TEMPLATE
    if tokenizer.chat_template == ACE_CHAT_TEMPLATE and getattr(tokenizer, "response_template", None) is None:
        tokenizer.response_template = ACE_RESPONSE_TEMPLATE
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


class TrlToolEnv:
    """One rollout of one ACE task: tools run in the task's own fresh state; the verifier judges.

    Use a subclass from :func:`environment_class` (this base has no tools).
    """

    #: The BFCL functions this class exposes as tools (its methods), in order.
    tool_names: tuple[str, ...] = ()

    #: What one tool call may spend (the verifier's defaults); a call over it ends the rollout.
    budget: Budget = Budget()

    def __init__(self) -> None:
        self._task_json: str | None = None
        self._task: Task | None = None
        self._runner: BoundedCalls | None = None  # the watched worker this rollout's calls run in
        self._ended: Overrun | None = None
        self._turn = 0
        self._calls: list[list[dict[str, Any]]] = [[]]
        self._verdict: Verdict | None = None

    def _close(self) -> None:
        """Stop this rollout's tool-call worker (private: TRL makes every public method a tool)."""
        if self._runner is not None:
            self._runner.close()
            self._runner = None

    def __del__(self) -> None:
        try:
            if getattr(self, "_runner", None) is not None:
                self._close()
        except Exception:  # interpreter shutdown: the worker dies with its parent anyway (PDEATHSIG)
            pass

    def reset(self, task: str | None = None, **row: Any) -> None:
        """Start a rollout of the row's task (the ``task`` column of ACE's TRL export) in turn 0."""
        if not isinstance(task, str):
            raise EnvironmentUseError(
                "TrlToolEnv.reset needs the 'task' column of ACE's TRL export (ace export --format trl)"
            )
        parsed = _task(task)
        offered = set(parsed.offered_tools(0))
        if offered != set(self.tool_names):
            raise EnvironmentUseError(
                f"task {parsed.id} offers {len(offered)} tools in turn 0 but {type(self).__name__} exposes "
                f"{len(self.tool_names)} others; route rows by their 'environment' column "
                "(environment_factory=environment_factories(rows))"
            )
        self._close()
        self._task_json, self._task = task, parsed
        self._runner = BoundedCalls({parsed.id: parsed}, self.budget)
        self._ended = None
        self._turn = 0
        self._calls = [[]]
        self._verdict = None
        return None

    @property
    def task(self) -> Task | None:
        """The task being played (None before :meth:`reset`)."""
        return self._task

    @property
    def calls(self) -> list[list[dict[str, Any]]]:
        """The calls made so far, per turn, as ``{"name", "arguments"}``."""
        return [list(t) for t in self._calls]

    @property
    def verdict(self) -> Verdict:
        """ACE's verifier on the calls made, over the turns played."""
        if self._task_json is None:
            raise EnvironmentUseError("no rollout yet: call reset(**row) first")
        if self._verdict is None:
            task = task_prefix(self._task_json, self._turn + 1)
            if self._ended is not None:
                steps = len(self._calls[self._turn]) - 1
                self._verdict = over_budget(task, None, self._ended.kind, self._ended.detail, self._turn, steps)
            else:
                with BoundedVerifier({task.id: task}, self.budget, strict=STRICT) as verifier:
                    [result] = verifier.verify_many([(task.id, self._calls, None)])
                if isinstance(result, LineError):
                    raise EnvironmentUseError(f"task {task.id}: the verifier could not judge this rollout: {result}")
                self._verdict = result
        return self._verdict

    def get_reward(self) -> float:
        """The verifier's reward for this rollout: 1.0 when every turn played passes, else 0.0."""
        return reward_of(self.verdict)

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self._ended is not None:
            return f"Error: the rollout has ended: an earlier call went over its budget ({self._ended.detail})"
        if self._runner is None or self._task is None:
            raise EnvironmentUseError("no rollout yet: call reset(**row) first")
        call = {"name": name, "arguments": arguments}
        self._calls[self._turn].append(call)
        self._verdict = None
        [result] = self._runner.run([(self._task.id, call, self._turn)])
        if isinstance(result, Overrun):
            self._ended = result
            self._close()
            log.info("%s turn %d: %s went over budget: %s", self._task.id, self._turn, name, result.detail)
            return f"Error: {result.detail}"
        log.debug("%s turn %d: %s -> %s", self._task.id if self._task else "?", self._turn, name, result.status)
        return (result.output or "") if result.executed else f"Error: {result.detail}"


@functools.lru_cache(maxsize=4096)
def _task(task_json: str) -> Task:
    return Task.from_dict(json.loads(task_json))


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def _hint(schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "array":
        item = schema.get("items")
        inner = _HINTS.get(item.get("type")) if isinstance(item, dict) else None
        return list[inner] if inner is not None else list  # type: ignore[valid-type]
    return _HINTS.get(kind, str)


def _tool_method(name: str) -> Any:
    """A method that runs BFCL's ``name`` in the rollout's environment, typed and documented from its schema."""
    fn = twins.tool_schema(name)["function"]
    props: dict[str, Any] = fn["parameters"].get("properties", {})
    required = set(fn["parameters"].get("required", []))

    def tool(self: TrlToolEnv, **arguments: Any) -> str:
        return self._call(name, arguments)

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    hints: dict[str, Any] = {}
    lines = []
    for pname, p in props.items():
        hints[pname] = _hint(p)
        default = inspect.Parameter.empty if pname in required else p.get("default")
        params.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hints[pname]))
        lines.append(f"    {pname}: {_one_line(p.get('description', '')) or pname}")
    hints["return"] = str
    description = _one_line(fn.get("description", "")).split("Tool description: ")[-1] or name
    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = description + ("\n\nArgs:\n" + "\n".join(lines) if lines else "") + \
        "\n\nReturns:\n    The tool's output, or an error message."
    tool.__annotations__ = hints
    tool.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    return tool


@functools.lru_cache(maxsize=1024)
def _class_for(names: tuple[str, ...]) -> type[TrlToolEnv]:
    known = twins.all_functions()  # BFCL's functions and ACE's wrong-way twins
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"not BFCL functions, so no environment tools: {', '.join(unknown)}")
    reserved = [n for n in names if n.startswith("_") or hasattr(TrlToolEnv, n)]
    if reserved:
        raise ConfigError(f"tool names clash with TrlToolEnv's own attributes: {', '.join(reserved)}")
    namespace: dict[str, Any] = {n: _tool_method(n) for n in names}
    namespace["tool_names"] = names
    namespace["__doc__"] = f"An ACE task environment whose tools are: {', '.join(names)}."
    digest = hashlib.sha256(",".join(sorted(names)).encode()).hexdigest()[:10]
    return type(f"TrlToolEnv_{digest}", (TrlToolEnv,), namespace)


def environment_class(tool_names: Iterable[str]) -> type[TrlToolEnv]:
    """The :class:`TrlToolEnv` subclass whose tools are ``tool_names`` (one class per set, cached)."""
    return _class_for(tuple(dict.fromkeys(tool_names)))


def environment_factories(rows: Iterable[Mapping[str, Any]]) -> dict[str, type[TrlToolEnv]]:
    """``{environment name: class}`` for the rows of ACE's TRL export (its ``environment`` and ``tools`` columns).

    Pass it as ``GRPOTrainer(environment_factory=...)``; a ``datasets.Dataset`` of the export works as ``rows``.
    """
    out: dict[str, type[TrlToolEnv]] = {}
    for row in rows:
        name, task_json = row.get("environment"), row.get("task")
        if not isinstance(name, str) or not isinstance(task_json, str):
            raise ConfigError("rows need the 'environment' and 'task' columns of ACE's TRL export "
                              "(ace export --format trl)")
        if name not in out:
            task = _task(task_json)
            offered = task.offered_tools(0)
            out[name] = environment_class(t for t in task.tools if t in offered)
    return out


__all__ = [
    "ACE_RESPONSE_TEMPLATE",
    "TrlToolEnv",
    "environment_class",
    "environment_factories",
    "prepare_tokenizer",
]
