"""τ²-bench's own result files as rollouts: what ``ace ingest`` and ``ace verify`` read from them.

τ²'s ``run`` writes one JSON document per run: ``info`` (the agent's and user's models, the domain),
``tasks`` (the full definitions of the tasks it ran) and ``simulations`` (one per conversation and trial:
``id``, ``task_id``, ``trial``, ``termination_reason``, ``reward_info``, ``messages`` whose ``tool_calls``
carry their ``requestor``, ``assistant`` or ``user``).  :func:`read_results` turns one into ACE rollouts:

* one rollout per simulation, its ``id`` the rollout id (trials kept apart), its task
  ``tau2:DOMAIN:TASK_ID`` with the domain from ``info.environment_info.domain_name``;
* its calls in order, each with its requestor (telecom's user acts on the phone: those calls stay the
  user's, and are never charged to the agent);
* ``meta``: the agent's text messages (τ²'s COMMUNICATE check reads them), ``termination_reason`` (a
  conversation cut off by ``max_steps`` or ``too_many_errors`` scores 0), the recorded reward
  (``reference_reward``), the trial.

Task ids mean something only against the task set a file was run on, so every task the file defines is
compared with the installed task of that id (:func:`task_difference`): the same gold (actions, assertions,
values to communicate, reward basis, initial state) or the file is refused in one line that names the
task and the first difference.  The file is read and checked whole before any rollout is handed out, so a
malformed file stores nothing.
"""

from __future__ import annotations

import functools
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ace_env.errors import RolloutFormatError, TaskLoadError
from ace_env.rollout import Rollout, control_character
from ace_env.tau2 import DOMAINS
from ace_env.tau2.env import raw_tasks
from ace_env.tau2.rollouts import call_dict
from ace_env.tau2.tasks import ace_id

FORMAT = "tau2-results"
#: The largest result file read (the largest published ones are a few MB; the whole file is parsed at once).
MAX_RESULTS_BYTES = 256 * 1024 * 1024
#: How much of a file :func:`sniff` looks at.
_SNIFF_BYTES = 1 << 16


@dataclass
class ResultsFile:
    """One τ² result file, read and checked."""

    path: Path
    domain: str
    policy: str | None  # info.agent_info.llm
    rollouts: list[Rollout] = field(default_factory=list)

    @property
    def task_ids(self) -> list[str]:
        return sorted({r.task_id for r in self.rollouts})


def sniff(path: str | Path) -> bool:
    """Whether a file looks like a τ² result file (a JSON document with ``simulations``), not JSONL.

    Cheap: it reads the first 64 KB.  A JSONL file whose first line is a whole JSON object is JSONL, unless
    that object itself has ``simulations`` and ``tasks`` (a result file written on one line)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a pipe or a device: never opened here (it could block)
            return False
        with open(path, "rb") as f:
            head = f.read(_SNIFF_BYTES)
    except OSError:
        return False
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if not text.startswith("{"):
        return False
    first = text.split("\n", 1)[0]
    if first.strip() == "{":  # an indented document, as τ²'s run writes it: a result file if it says so
        return '"simulations"' in text or '"info"' in text or '"tasks"' in text
    try:
        obj = json.loads(first)
    except (ValueError, RecursionError):  # one long line past the sniffed part (or broken, or nested too deeply
        # for the decoder: the JSONL reader says so for its line): τ²'s keys come first in its files
        return first.replace(" ", "").startswith(('{"timestamp":', '{"info":'))
    return isinstance(obj, dict) and "simulations" in obj and "tasks" in obj


def _fail(path: Path, message: str) -> RolloutFormatError:
    return RolloutFormatError(f"{path}: not a τ² result file as τ²'s run writes it: {message}")


def _load(path: Path) -> dict[str, Any]:
    size = path.stat().st_size
    if size > MAX_RESULTS_BYTES:
        raise _fail(path, f"{size:,} bytes, over the {MAX_RESULTS_BYTES:,} a result file may have")
    try:
        doc = json.loads(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        raise _fail(path, f"not valid UTF-8 ({e.reason} at byte {e.start})") from e
    except (ValueError, RecursionError) as e:
        raise _fail(path, f"not valid JSON ({getattr(e, 'msg', None) or type(e).__name__})") from e
    if not isinstance(doc, dict):
        raise _fail(path, "the document is not a JSON object")
    for key, kind in (("info", dict), ("tasks", list), ("simulations", list)):
        if not isinstance(doc.get(key), kind):
            raise _fail(path, f"{key!r} is missing or not a {'object' if kind is dict else 'list'}")
    return doc


def _domain(path: Path, info: dict[str, Any]) -> str:
    env = info.get("environment_info")
    domain = env.get("domain_name") if isinstance(env, dict) else None
    if not isinstance(domain, str):
        raise _fail(path, "info.environment_info.domain_name is missing")
    if domain not in DOMAINS:
        raise RolloutFormatError(f"{path}: τ² domain {domain!r} is not one ACE runs ({', '.join(DOMAINS)})")
    return domain


def _pruned(value: Any) -> Any:
    """``value`` with null-valued keys dropped (τ² versions differ in which optional fields they write)."""
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def _gold_view(task: dict[str, Any]) -> dict[str, Any]:
    """What decides a task's verdict: its evaluation criteria (without the natural-language assertions,
    which ACE never checks) and its initial state; requestors default to the assistant, as τ²'s do."""
    crit = dict(task.get("evaluation_criteria") or {})
    crit.pop("nl_assertions", None)
    actions = []
    for a in crit.get("actions") or []:
        a = dict(a) if isinstance(a, dict) else {"action": a}
        a.pop("action_id", None)
        a.pop("info", None)
        a.setdefault("requestor", "assistant")
        actions.append(a)
    crit["actions"] = actions
    return _pruned({"evaluation_criteria": crit, "initial_state": task.get("initial_state")})


def _first_difference(a: Any, b: Any, where: str = "") -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}.{k}".lstrip(".") + (" only in the file" if k in a else " missing from the file")
            d = _first_difference(a[k], b[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where.lstrip('.')}: {len(a)} in the file, {len(b)} installed"
        for i, (x, y) in enumerate(zip(a, b)):
            d = _first_difference(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    if a != b:
        return f"{where.lstrip('.')}: {json.dumps(a, default=str)[:60]} in the file, {json.dumps(b, default=str)[:60]} installed"
    return None


def task_difference(domain: str, file_task: dict[str, Any]) -> str | None:
    """None when the file's task is the installed task of its id (the same gold); else the first difference."""
    installed = raw_tasks(domain).get(str(file_task.get("id")))
    if installed is None:
        return "no installed task has this id"
    mine = _gold_view(json.loads(installed.model_dump_json()))
    return _first_difference(_gold_view(file_task), mine)


def _calls_and_texts(path: Path, sim: dict[str, Any], where: str) -> tuple[list[dict[str, Any]], list[str]]:
    messages = sim.get("messages")
    if not isinstance(messages, list):
        raise _fail(path, f"{where}: 'messages' is not a list")
    calls: list[dict[str, Any]] = []
    texts: list[str] = []
    for m, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise _fail(path, f"{where}: message {m} is not an object")
        role = msg.get("role")
        if role == "assistant" and isinstance(msg.get("content"), str) and msg["content"]:
            texts.append(msg["content"])
        tool_calls = msg.get("tool_calls") or []
        if role not in ("assistant", "user") or not tool_calls:
            continue
        if not isinstance(tool_calls, list):
            raise _fail(path, f"{where}: message {m}: 'tool_calls' is not a list")
        for c, tc in enumerate(tool_calls):
            if not isinstance(tc, dict) or not isinstance(tc.get("name"), str):
                raise _fail(path, f"{where}: message {m}: tool call {c} has no name")
            requestor = tc.get("requestor") or role
            if requestor not in ("assistant", "user"):
                raise _fail(path, f"{where}: message {m}: tool call {c}: requestor {requestor!r}")
            calls.append(call_dict(tc["name"], tc.get("arguments", {}), requestor))
    return calls, texts


def read_results(path: str | Path) -> ResultsFile:
    """Read and check a τ² result file whole: its rollouts, domain and agent (see the module doc).

    Raises :class:`RolloutFormatError` for a file that is not one (one line, naming what is wrong) and
    :class:`TaskLoadError` when a task it defines differs from the installed task of that id."""

    path = Path(path)
    doc = _load(path)
    info = doc["info"]
    domain = _domain(path, info)
    agent = info.get("agent_info")
    policy = agent.get("llm") if isinstance(agent, dict) and isinstance(agent.get("llm"), str) else None
    defined: dict[str, dict[str, Any]] = {}
    for i, t in enumerate(doc["tasks"]):
        if not isinstance(t, dict) or not isinstance(t.get("id"), (str, int)):
            raise _fail(path, f"tasks[{i}] has no id")
        defined[str(t["id"])] = t
    for tid, t in defined.items():
        why = task_difference(domain, t)
        if why is not None:
            raise TaskLoadError(f"{path}: τ² {domain} task {tid!r} differs from the installed one ({why}); the "
                                "file was run on another τ² task set, and its verdicts would not mean the same")
    out = ResultsFile(path, domain, policy)
    seen: set[str] = set()
    for s, sim in enumerate(doc["simulations"]):
        where = f"simulations[{s}]"
        if not isinstance(sim, dict):
            raise _fail(path, f"{where} is not an object")
        sid, tid = sim.get("id"), sim.get("task_id")
        if not isinstance(sid, str) or not sid:
            raise _fail(path, f"{where}: 'id' is not a non-empty string")
        if (bad := control_character(sid)) is not None:
            raise _fail(path, f"{where}: simulation id {sid[:40]!r} holds the control character U+{ord(bad):04X}; "
                              "ids are one line of printable characters")
        if sid in seen:
            raise _fail(path, f"{where}: simulation id {sid[:80]!r} repeats")
        seen.add(sid)
        if str(tid) not in defined:
            raise _fail(path, f"{where}: task {tid!r} is not among the file's tasks")
        calls, texts = _calls_and_texts(path, sim, where)
        reward_info = sim.get("reward_info")
        reward = reward_info.get("reward") if isinstance(reward_info, dict) else None
        termination = sim.get("termination_reason")
        meta = {"format": FORMAT, "texts": texts,
                "termination_reason": termination if isinstance(termination, str) else None,
                "reference_reward": reward if isinstance(reward, (int, float)) and not isinstance(reward, bool)
                else None,
                "trial": sim.get("trial")}
        out.rollouts.append(Rollout(sid, ace_id(domain, str(tid)), [calls], s + 1, meta))
    if not out.rollouts:
        raise _fail(path, "it holds no simulations")
    return out


@functools.lru_cache(maxsize=16)
def _cached(path: str, mtime_ns: int, size: int) -> ResultsFile:
    return read_results(path)


def read_results_cached(path: str | Path) -> ResultsFile:
    """:func:`read_results`, kept while the file is unchanged (a command reads a file's header first, then
    its rollouts)."""
    st = Path(path).stat()
    return _cached(str(Path(path).resolve()), st.st_mtime_ns, st.st_size)


__all__ = ["FORMAT", "MAX_RESULTS_BYTES", "ResultsFile", "read_results", "read_results_cached", "sniff", "task_difference"]
