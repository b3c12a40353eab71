"""One parser for what a model says: its text and its tool calls become calls, as data.

A model's assistant message carries its calls in one of three forms:

* OpenAI ``tool_calls`` (``[{"id", "type": "function", "function": {"name",
  "arguments": "<json>"}}]``), as an OpenAI-compatible server returns them;
* Hermes / Qwen2.5 ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
  blocks in its text, as a local model writes them with a ChatML tool template;
* a BFCL python-list string (``[cd(folder='x'), ls()]``), as BFCL's prompting
  models write them.

:func:`parse_output` turns any of them into a list of calls in the form the
executor and the verifier take: ``{"name", "arguments"}`` objects and BFCL call
strings.  Whatever cannot be read as a call (an unclosed tag, JSON with trailing
garbage, a nested tag, a non-literal argument, too much text) becomes a
*malformed marker*, ``{"malformed": reason, "raw": excerpt}``, which the executor
never runs and the verifier records as ``malformed_call``.  Nothing is evaluated:
JSON is decoded with :mod:`json`, python syntax read with :mod:`ast` only.

>>> parse_output('<tool_call>{"name": "ls", "arguments": {}}</tool_call>').calls
[{'name': 'ls', 'arguments': {}}]
>>> parse_output('<tool_call>{"name": "ls"} oops</tool_call>').calls[0]["malformed"]
'the <tool_call> block is not one JSON object (trailing text after it)'
>>> parse_output("[cd(folder='x'), ls()]").calls
["cd(folder='x')", 'ls()']
>>> parse_output("I would list the files with ls.").calls
[]
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ace_env.calls import MAX_CALL_CHARS, Call, respelled_name

OPEN, CLOSE = "<tool_call>", "</tool_call>"

#: Text longer than this is not searched for calls: the whole message is one malformed call.
MAX_OUTPUT_CHARS = 262_144
#: At most this many calls are read from one message; more is one malformed call.
MAX_CALLS_PER_MESSAGE = 32

_PY_LIST = re.compile(r"\[\s*[A-Za-z_][A-Za-z0-9_.]*\s*\(")


@dataclass
class ParsedOutput:
    """The calls of one assistant message and its text outside them."""

    calls: list[Any] = field(default_factory=list)
    text: str = ""

    @property
    def n_malformed(self) -> int:
        return sum(1 for c in self.calls if is_malformed(c))


def malformed(reason: str, raw: str) -> dict[str, str]:
    """A marker for output that is not a call (kept, truncated, for the record)."""
    return {"malformed": reason, "raw": raw if len(raw) <= 200 else raw[:200] + f"...(+{len(raw) - 200} chars)"}


def is_malformed(call: Any) -> bool:
    return isinstance(call, dict) and "malformed" in call and "name" not in call


def _json_call(body: str) -> Any:
    """One ``<tool_call>`` body as a call object, or a malformed marker."""
    text = body.strip()
    if len(text) > MAX_CALL_CHARS:
        return malformed(f"the <tool_call> block is longer than {MAX_CALL_CHARS} characters", text)
    try:
        obj, end = json.JSONDecoder().raw_decode(text)
    except (json.JSONDecodeError, RecursionError) as e:
        why = e.msg if isinstance(e, json.JSONDecodeError) else "nested too deeply"
        return malformed(f"the <tool_call> block is not valid JSON ({why})", text)
    if text[end:].strip():
        return malformed("the <tool_call> block is not one JSON object (trailing text after it)", text)
    return openai_call(obj, text)


def openai_call(obj: Any, raw: str | None = None) -> Any:
    """A ``{"name", "arguments"}`` object (or ``{"function": {...}}``) normalised, or a malformed marker."""
    shown = raw if raw is not None else _dump(obj)
    if not isinstance(obj, dict):
        return malformed("a call must be a JSON object with 'name' and 'arguments'", shown)
    fn = obj.get("function", obj)
    if not isinstance(fn, dict):
        return malformed("'function' must be an object", shown)
    name = fn.get("name")
    if not isinstance(name, str) or not name.isidentifier():
        return malformed("the call needs a 'name' that is an identifier", shown)
    arguments = fn.get("arguments", fn.get("parameters", {}))
    if isinstance(arguments, str):
        if len(arguments) > MAX_CALL_CHARS:
            return malformed(f"'arguments' longer than {MAX_CALL_CHARS} characters", shown)
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (json.JSONDecodeError, RecursionError):
            return malformed("'arguments' is not valid JSON", shown)
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return malformed("'arguments' must be a JSON object", shown)
    if not all(isinstance(k, str) and k.isidentifier() for k in arguments):
        return malformed("argument names must be identifiers", shown)
    return {"name": name, "arguments": arguments}


def _dump(obj: Any) -> str:
    try:
        return json.dumps(obj, default=str)[:400]
    except (TypeError, ValueError, RecursionError):
        return repr(obj)[:400]


def _hermes(text: str) -> ParsedOutput:
    """Calls in ``<tool_call>`` blocks; the text outside them is kept."""
    out = ParsedOutput()
    outside: list[str] = []
    pos = 0
    while True:
        start = text.find(OPEN, pos)
        if start < 0:
            outside.append(text[pos:])
            break
        outside.append(text[pos:start])
        body_start = start + len(OPEN)
        end = text.find(CLOSE, body_start)
        if end < 0:
            out.calls.append(malformed("an unclosed <tool_call> tag", text[start:]))
            break
        body = text[body_start:end]
        if OPEN in body:
            # `<tool_call><tool_call>{...}</tool_call>`: the outer tag never closed.
            out.calls.append(malformed("a <tool_call> tag inside another", text[start : end + len(CLOSE)]))
        else:
            out.calls.append(_json_call(body))
        pos = end + len(CLOSE)
    stray = "".join(outside)
    if CLOSE in stray:
        out.calls.append(malformed("a </tool_call> tag without its opening tag", stray))
    out.text = stray.replace(CLOSE, "").strip()
    return out


def _strip_fence(text: str) -> str:
    s = text.strip()
    if s.startswith("```"):
        s = s[3:]
        if s.startswith("python"):
            s = s[len("python") :]
        if s.rstrip().endswith("```"):
            s = s.rstrip()[:-3]
    return s.strip()


def _python_list(text: str) -> ParsedOutput | None:
    """Calls in a BFCL python-list string, or None when the text does not try to be one."""
    source = _strip_fence(text)
    if not _PY_LIST.match(source):
        return None
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
        return ParsedOutput([malformed(f"not a python list of calls ({type(e).__name__})", source)])
    body = tree.body
    if not isinstance(body, (ast.List, ast.Tuple)) or not all(isinstance(e, ast.Call) for e in body.elts):
        return ParsedOutput([malformed("not a python list of calls", source)])
    calls: list[Any] = []
    for node in body.elts:
        calls.append(_render(node, source))
    return ParsedOutput(calls)


def _render(node: ast.Call, source: str) -> Any:
    segment = ast.get_source_segment(source, node) or ""
    if not isinstance(node.func, ast.Name):
        return malformed("the callee must be a bare function name", segment)
    if respelled_name(node, source) is not None:
        return malformed("a name that is not written as the tools spell it (Unicode compatibility characters)", segment)
    args, kwargs = [], {}
    for a in node.args:
        if isinstance(a, ast.Starred):
            return malformed("star-arguments are not allowed", segment)
        try:
            args.append(ast.literal_eval(a))
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return malformed("an argument is not a literal", segment)
    for kw in node.keywords:
        if kw.arg is None or kw.arg in kwargs:
            return malformed("**-arguments or a repeated argument", segment)
        try:
            kwargs[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return malformed(f"argument {kw.arg!r} is not a literal", segment)
    return Call(node.func.id, tuple(args), kwargs).render()


def parse_output(text: str | None, tool_calls: Any = None) -> ParsedOutput:
    """The calls of one assistant message (never raises; nothing is executed)."""
    calls: list[Any] = []
    if tool_calls:
        if not isinstance(tool_calls, list):
            calls.append(malformed("'tool_calls' must be a list", _dump(tool_calls)))
        else:
            calls.extend(openai_call(c) for c in tool_calls)
    if text is None:
        text = ""
    if not isinstance(text, str):
        return ParsedOutput(calls + [malformed("the message content is not text", _dump(text))])
    if len(text) > MAX_OUTPUT_CHARS:
        return ParsedOutput(calls + [malformed(f"a message longer than {MAX_OUTPUT_CHARS} characters", text)])
    if OPEN in text or CLOSE in text:
        parsed = _hermes(text)
    else:
        parsed = _python_list(text) or ParsedOutput([], text.strip())
    parsed.calls = calls + parsed.calls
    if len(parsed.calls) > MAX_CALLS_PER_MESSAGE:
        parsed.calls = [malformed(f"more than {MAX_CALLS_PER_MESSAGE} calls in one message", text)]
    return parsed


def parse_message(message: dict[str, Any]) -> ParsedOutput:
    """The calls of an OpenAI-style assistant message (``content`` and/or ``tool_calls``)."""
    calls = message.get("tool_calls")
    legacy = message.get("function_call")
    if legacy:
        calls = [*(calls if isinstance(calls, list) else []), {"function": legacy}]
    content = message.get("content")
    if isinstance(content, list):  # OpenAI content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return parse_output(content, calls)


__all__ = [
    "MAX_CALLS_PER_MESSAGE",
    "MAX_OUTPUT_CHARS",
    "ParsedOutput",
    "is_malformed",
    "malformed",
    "openai_call",
    "parse_message",
    "parse_output",
]
