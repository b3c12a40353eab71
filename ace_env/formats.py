"""Rollouts from other tools' files: ACE JSONL, OpenAI chat transcripts, BFCL result files.

:func:`read_any` streams a file line by line and detects the format of each
line on its own, so files may even mix formats:

``ace``
    ``{"rollout_id", "task_id", "turns": [[call, ...], ...]}`` (read by
    :func:`parse_rollout`).
``openai``
    ``{"rollout_id"?, "task_id", "messages": [...]}``: every ``user`` message
    starts a new turn (the first one is turn 0); the ``tool_calls`` of the
    ``assistant`` messages that follow are that turn's calls, as
    ``{"name", "arguments"}`` objects, followed by the calls written in
    its raw text (Hermes ``<tool_call>`` blocks or a BFCL python list, read by
    :mod:`ace_env.modelout`; unreadable ones are malformed calls).  ``system``
    and ``tool`` messages are ignored.
``bfcl``
    One entry of a BFCL result file as written by ``bfcl generate``
    (``BFCL_v4_multi_turn_base_result.json``): ``{"id", "result": [turn][step]}``
    where a step is what the model returned in one round trip: a list of
    ``{func_name: arguments}`` (function-calling models) or a string of
    Python call syntax such as ``[f(a=1), g(b='x')]`` (prompting models).
    A turn's calls are its steps' calls in order.  A step of chat text
    contributes no call (the model answered instead of calling), as in BFCL.
    A step that *attempts* a call and gets it wrong (a string that starts
    like a call, ``mkdir(dir_name='temp'``, but does not parse; a list of
    calls with a non-call in it; function-calling arguments that are not a
    JSON object) is kept as a malformed call, so the verifier reports
    ``malformed_call`` as it does for the other formats.  A ``result`` that is
    a string (``"Error during inference: ..."``) is a failed generation: the
    rollout has no calls and ``meta["inference_error"]`` holds the message
    (the verifier attributes it ``inference_error``).

``tau2-results`` (a whole file, not a line)
    A result file of τ²-bench's own ``run`` (one JSON document: ``info``, ``tasks``, ``simulations``),
    detected by content (:func:`ace_env.tau2.results.sniff`) and read whole by
    :func:`ace_env.tau2.results.read_results`: one rollout per simulation, its tasks checked against the
    installed ones.

Model output is data: Python call syntax is read with :mod:`ast` only, each
call is rendered back as a call string, and a call whose arguments are not
literals is kept as its source text, which the verifier rejects as malformed
without running it.  Nothing is evaluated, imported or executed here.

Rollout ids are strings.  A line without one (absent or ``null``) is named
by its file and line (``rollouts.jsonl:line-7``); any other non-string id
(``1``, ``true``, a list) is refused with an error that names the line, so
``1`` and ``"1"`` can never be coerced into one id and silently collide.
"""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path
from typing import Any, Iterator

from ace_env.calls import MAX_CALL_CHARS, Call, nesting_depth, respelled_name
from ace_env.errors import JsonRefused, RolloutFormatError
from ace_env.modelout import parse_output
from ace_env.rollout import Rollout, control_character
from ace_env.tau2.results import read_results_cached, sniff

ACE, OPENAI, BFCL = "ace", "openai", "bfcl"

#: Deepest JSON nesting a rollout line may have (a real one needs about 8): deeper
#: lines are refused whole, before anything recursive (copies, repr, json.dumps,
#: pickle) walks them.
MAX_LINE_DEPTH = 64
FORMATS = (ACE, OPENAI, BFCL)


def parse_rollout(obj: Any, line: int) -> Rollout:
    """Validate one decoded rollout line."""
    if not isinstance(obj, dict):
        raise RolloutFormatError(f"line {line}: a rollout must be a JSON object")
    task_id = obj.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        raise RolloutFormatError(f"line {line}: 'task_id' must be a non-empty string")
    turns = obj.get("turns")
    if not isinstance(turns, list) or not all(isinstance(t, list) for t in turns):
        raise RolloutFormatError(f"line {line}: 'turns' must be a list of lists of calls")
    for t, calls in enumerate(turns):
        for c in calls:
            if not isinstance(c, (str, dict)):
                raise RolloutFormatError(
                    f"line {line}: turn {t}: a call must be a string or a {{name, arguments}} object"
                )
    return Rollout(rollout_id_of(obj, line, "rollout_id"), task_id, turns, line, obj.get("meta"))


#: Longest rollout id accepted (an id is stored, printed and echoed in errors).
MAX_ID_CHARS = 1024


def rollout_id_of(obj: dict[str, Any], line: int, *keys: str) -> str:
    """The first of ``keys`` that is present and not null; ``line-N`` when none is.

    Ids must be non-empty strings: ``1`` is refused rather than coerced to ``"1"``.
    """
    for key in keys:
        value = obj.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            shown = json.dumps(value, default=str)[:40]
            raise RolloutFormatError(f"line {line}: {key!r} must be a non-empty string, not {shown}")
        if len(value) > MAX_ID_CHARS:
            raise RolloutFormatError(f"line {line}: {key!r} is {len(value):,} characters long ({value[:40]!r}...); "
                                     f"ids are at most {MAX_ID_CHARS:,}")
        bad = control_character(value)
        if bad is not None:
            raise RolloutFormatError(f"line {line}: {key!r} holds the control character U+{ord(bad):04X} "
                                     f"({value[:40]!r}); ids are one line of printable characters")
        return value
    return f"line-{line}"


def detect(obj: Any) -> str | None:
    """The format of one decoded line, or None when it is none of them."""
    if not isinstance(obj, dict):
        return None
    if "turns" in obj:
        return ACE
    if "messages" in obj:
        return OPENAI
    if "result" in obj and "id" in obj:
        return BFCL
    return None


# --------------------------------------------------------------------------- OpenAI


def _openai_call(call: Any, where: str) -> dict[str, Any]:
    if not isinstance(call, dict):
        raise RolloutFormatError(f"{where}: a tool call must be an object")
    fn = call.get("function", call)
    if not isinstance(fn, dict):
        raise RolloutFormatError(f"{where}: 'function' must be an object")
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise RolloutFormatError(f"{where}: the function has no 'name'")
    arguments = fn.get("arguments", {})
    if isinstance(arguments, str):
        # Decoded when it is a JSON object; otherwise kept, and the verifier
        # records the call as malformed.
        try:
            decoded = json.loads(arguments) if arguments.strip() else {}
        except (json.JSONDecodeError, RecursionError):
            decoded = None
        if isinstance(decoded, dict):
            arguments = decoded
    elif not isinstance(arguments, dict):
        raise RolloutFormatError(f"{where}: 'arguments' must be a JSON string or an object")
    return {"name": name, "arguments": arguments}


def parse_openai(obj: dict[str, Any], line: int) -> Rollout:
    """One OpenAI-style transcript as a rollout."""
    task_id = obj.get("task_id")
    if not isinstance(task_id, str) or not task_id:
        raise RolloutFormatError(f"line {line}: 'task_id' must be a non-empty string")
    messages = obj.get("messages")
    if not isinstance(messages, list):
        raise RolloutFormatError(f"line {line}: 'messages' must be a list")
    turns: list[list[Any]] = []
    for m, msg in enumerate(messages):
        where = f"line {line}: message {m}"
        if not isinstance(msg, dict):
            raise RolloutFormatError(f"{where}: a message must be an object")
        role = msg.get("role")
        if role == "user":
            turns.append([])
        elif role == "assistant":
            calls = msg.get("tool_calls") or []
            legacy = msg.get("function_call")
            if legacy:
                calls = [*calls, {"function": legacy}]
            if not isinstance(calls, list):
                raise RolloutFormatError(f"{where}: 'tool_calls' must be a list")
            # Raw text (Hermes <tool_call> blocks, a BFCL python list) goes through the
            # one model-output parser; what it cannot read is a malformed call.
            text_calls = parse_output(msg.get("content")).calls if isinstance(msg.get("content"), str) else []
            if (calls or text_calls) and not turns:
                raise RolloutFormatError(f"{where}: an assistant calls tools before the first user message")
            for c, call in enumerate(calls):
                turns[-1].append(_openai_call(call, f"{where}: tool call {c}"))
            if text_calls:
                turns[-1].extend(text_calls)
        elif role in ("system", "developer", "tool", "function"):
            continue
        else:
            raise RolloutFormatError(f"{where}: unknown role {role!r}")
    rollout_id = rollout_id_of(obj, line, "rollout_id", "id")
    return Rollout(rollout_id, task_id, turns, line, obj.get("meta"))


# --------------------------------------------------------------------------- BFCL


def _literal(node: ast.AST) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError, OverflowError):
        return False, None


def _render_node(node: ast.Call, source: str) -> str:
    """A call node as a call string: rendered from its literals, else its source text."""
    if (isinstance(node.func, ast.Name) and not any(isinstance(a, ast.Starred) for a in node.args)
            and respelled_name(node, source) is None):
        args, kwargs, ok = [], {}, True
        for a in node.args:
            good, value = _literal(a)
            ok &= good
            args.append(value)
        for kw in node.keywords:
            good, value = _literal(kw.value)
            ok &= good and kw.arg is not None and kw.arg not in kwargs
            kwargs[kw.arg] = value
        if ok:
            return Call(node.func.id, tuple(args), kwargs).render()
    # Not a plain literal call: keep the text so the verifier rejects it as malformed.
    return ast.get_source_segment(source, node) or ast.dump(node.func)


#: A step that starts like a call (``name(`` after an optional ``[``) is an attempt to call.
_CALL_LIKE = re.compile(r"^\s*\[?\s*[A-Za-z_][A-Za-z0-9_.]*\s*\(")


def decode_python_step(text: str) -> list[str]:
    """Calls in a prompting model's step (``[f(a=1), g(b='x')]``).

    [] when the step is chat text.  A step that tries to call but is not a
    list of literal calls is kept as text, which the verifier rejects as a
    malformed call without running it.
    """
    attempt = _CALL_LIKE.match(text) is not None
    if len(text) > MAX_CALL_CHARS:
        return [text] if attempt else []
    # Like BFCL: strip code fences and wrapping quotes, add the brackets if missing.
    source = text.strip("`\n ")
    if source.startswith("python\n"):
        source = source[len("python\n") :]
    source = source.strip().strip("'")
    if not source.startswith("["):
        source = "[" + source
    if not source.endswith("]"):
        source = source + "]"
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return [text.strip()] if attempt else []
    body = tree.body
    elements = body.elts if isinstance(body, (ast.List, ast.Tuple)) else [body]
    if not any(isinstance(e, ast.Call) for e in elements):
        return [text.strip()] if attempt else []
    # A call list with a non-call in it: every element is kept, the non-calls as (malformed) text.
    return [
        _render_node(e, source) if isinstance(e, ast.Call) else (ast.get_source_segment(source, e) or ast.dump(e))
        for e in elements
    ]


def _fc_argument_value(value: Any) -> Any:
    if isinstance(value, str):
        try:
            decoded = json.loads(value) if value.strip() else {}
        except (json.JSONDecodeError, RecursionError):
            return value
        return decoded
    return value


def decode_fc_step(step: list[Any]) -> list[Any]:
    """Calls in a function-calling model's step (``[{name: args}]``); [] when it is not one.

    Arguments that are not a JSON object are kept as they are, so the
    verifier records that call as malformed.
    """
    calls: list[Any] = []
    for item in step:
        if not isinstance(item, dict) or not item:
            return []
        for name, raw in item.items():
            if not isinstance(name, str):
                return []
            calls.append({"name": name, "arguments": _fc_argument_value(raw)})
    return calls


def decode_bfcl_step(step: Any) -> list[Any]:
    """The calls of one BFCL step; anything that is not a call list gives []."""
    if isinstance(step, str):
        return decode_python_step(step)
    if isinstance(step, dict):
        return decode_fc_step([step])
    if isinstance(step, list):
        if all(isinstance(s, str) for s in step) and step:
            # Already decoded call strings (e.g. a handler's decode_execute output).
            out: list[Any] = []
            for s in step:
                out.extend(decode_python_step(s))
            return out
        return decode_fc_step(step)
    return []


def parse_bfcl(obj: dict[str, Any], line: int, id_suffix: str = "") -> Rollout:
    """One BFCL result entry as a rollout (``rollout_id`` = id + ``id_suffix``)."""
    task_id = obj.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise RolloutFormatError(f"line {line}: 'id' must be a non-empty string")
    result = obj.get("result")
    meta: dict[str, Any] = {"format": BFCL}
    if isinstance(result, str):
        # `bfcl generate` records an inference error as a string: the model made no call.
        meta["inference_error"] = result[:500]
        turns: list[list[Any]] = []
    elif isinstance(result, list) and all(isinstance(t, list) for t in result):
        turns = []
        for steps in result:
            calls: list[Any] = []
            for step in steps:
                calls.extend(decode_bfcl_step(step))
            turns.append(calls)
    else:
        raise RolloutFormatError(
            f"line {line}: 'result' of a multi-turn entry must be a list (turns) of lists (steps)"
        )
    return Rollout(f"{task_id}{id_suffix}", task_id, turns, line, meta)


# --------------------------------------------------------------------------- reader


def parse_any(obj: Any, line: int, id_suffix: str = "") -> Rollout:
    """One decoded line in any supported format."""
    kind = detect(obj)
    if kind == ACE:
        return parse_rollout(obj, line)
    if kind == OPENAI:
        return parse_openai(obj, line)
    if kind == BFCL:
        return parse_bfcl(obj, line, id_suffix)
    raise RolloutFormatError(
        f"line {line}: not a rollout in a known format (ACE {{task_id, turns}}, "
        "OpenAI {task_id, messages} or a BFCL result entry {id, result})"
    )


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise JsonRefused(f"key {key[:40]!r} appears twice in one object")
    return obj


def _no_constant(name: str) -> Any:
    raise JsonRefused(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise JsonRefused(f"number {text[:40]} is too large for a float")
    return value


#: A ``\\uD800``-``\\uDFFF`` escape: JSON allows a lone one, which Python decodes to a string no UTF-8 holds (the
#: graph's driver then failed with a traceback).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def strict_json(line: str, n: int) -> Any:
    """One JSON line, decoded strictly: no duplicate keys, no NaN or Infinity, no float that overflows, no
    lone surrogate in a string.

    Python's decoder accepts all three (the last key wins; NaN, Infinity and
    1e400 become floats no JSON can hold); a rollout line with them is refused
    with :class:`RolloutFormatError` naming the line.
    """
    try:
        obj = json.loads(line, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constant,
                         parse_float=_finite_float)
        if _SURROGATE_ESCAPE.search(line):  # only then can a string hold a lone surrogate
            try:
                json.dumps(obj, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                raise JsonRefused("a string holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is no "
                                  "character and cannot be stored") from None
        return obj
    except JsonRefused as e:
        raise RolloutFormatError(f"line {n}: not valid JSON for ACE ({e})") from e
    except (ValueError, RecursionError) as e:  # ValueError: also an int over 4,300 digits
        msg = e.msg if isinstance(e, json.JSONDecodeError) else (
            "nested too deeply" if isinstance(e, RecursionError) else str(e)[:100])
        raise RolloutFormatError(f"line {n}: not valid JSON ({msg})") from e


def read_any(
    path: str | Path,
    skip_invalid: bool = False,
    errors: list[str] | None = None,
    id_suffix: str = "",
) -> Iterator[Rollout]:
    """Stream rollouts from a file in any supported format, detected per line.

    A bad line raises :class:`RolloutFormatError` naming the file and line,
    unless ``skip_invalid``, in which case the message goes to ``errors``.
    ``id_suffix`` is appended to every rollout id (e.g. a sample number, to
    keep two BFCL result files of one checkpoint apart).  A line without an id
    is named ``FILE:line-N``.  Lines are decoded strictly (:func:`strict_json`):
    invalid UTF-8, a key twice in an object, NaN, Infinity, a float that
    overflows and a ``rollout_id`` that repeats an earlier line's are bad lines.
    """
    path = Path(path)
    if path.is_dir():
        raise RolloutFormatError(f"rollout file {str(path)!r} is a folder, not a file")
    if not path.exists():
        raise RolloutFormatError(f"rollout file {str(path)!r} does not exist")
    if sniff(path):  # a τ² result file: one JSON document, read and checked whole (nothing yielded if bad)
        for rollout in read_results_cached(path).rollouts:
            yield Rollout(rollout.rollout_id + id_suffix, rollout.task_id, rollout.turns, rollout.line,
                          rollout.meta)
        return
    first_line: dict[str, int] = {}
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                try:
                    line = raw.decode("utf-8-sig" if n == 1 else "utf-8")  # a leading BOM is not part of the JSON
                except UnicodeDecodeError as e:
                    raise RolloutFormatError(f"line {n}: not valid UTF-8 (byte 0x{raw[e.start]:02x} at byte {e.start + 1}); "
                                             "save the file as UTF-8") from e
                if not line.strip():
                    continue
                obj = strict_json(line, n)
                if line.count("[") + line.count("{") > MAX_LINE_DEPTH and \
                        nesting_depth(obj, MAX_LINE_DEPTH) > MAX_LINE_DEPTH:
                    raise RolloutFormatError(f"line {n}: JSON nested deeper than {MAX_LINE_DEPTH} levels")
                rollout = parse_any(obj, n)
                if rollout.rollout_id == f"line-{n}":  # no id in the line: name it by file and line
                    rollout.rollout_id = f"{path.name}:line-{n}"
                rollout.rollout_id += id_suffix
                # An id given as rollout_id must not repeat (BFCL result lines are keyed by their task id instead)
                seen = first_line.setdefault(rollout.rollout_id, n) if "rollout_id" in obj else n
                if seen != n:
                    raise RolloutFormatError(f"line {n}: rollout id {rollout.rollout_id[:80]!r} repeats line {seen}; "
                                             "ids must be unique within a file")
                yield rollout
            except RolloutFormatError as e:
                if not skip_invalid:
                    raise RolloutFormatError(f"{path}: {e}") from e
                if errors is not None:
                    errors.append(f"{path}: {e}")


__all__ = ["FORMATS", "decode_bfcl_step", "detect", "parse_any", "read_any"]
