"""Parse tool calls from model output, safely.

Model output is data.  A call arrives either as a BFCL call string
(``mv(source='a', destination='b')``) or as an OpenAI-style object
(``{"name": ..., "arguments": {...} or "<json>"}``, optionally wrapped in
``{"function": {...}}``).  Strings are parsed with :mod:`ast` and accepted only
when they are a single call of a bare function name whose arguments are
literals; nothing is ever evaluated.  Anything else becomes a
:class:`MalformedCall` that says why.

>>> parse_call("mv(source='a', destination='b')")
Call(name='mv', args=(), kwargs={'source': 'a', 'destination': 'b'})
>>> parse_call("__import__('os').system('id')").reason
'the callee must be a bare function name, not Attribute'
"""

from __future__ import annotations

import ast
import functools
import json
import math
import unicodedata
from dataclasses import dataclass, field
from typing import Any

#: Longest call string ACE will parse; longer input is rejected unread.
MAX_CALL_CHARS = 65_536

#: Deepest nesting of lists/dicts an argument may have (BFCL's need at most 4).
#: Deeper values are refused as malformed before anything recurses over them.
MAX_ARGUMENT_DEPTH = 32


def nesting_depth(value: Any, limit: int) -> int:
    """How deeply lists/tuples/dicts nest in ``value``, counted without recursion; stops past ``limit``."""
    depth = 0
    stack = [(value, 0)]
    while stack:
        item, d = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        d += 1
        if d > depth:
            depth = d
            if depth > limit:
                return depth
        stack.extend((c, d) for c in children)
    return depth


def _too_deep(values: Any) -> bool:
    return nesting_depth(list(values), MAX_ARGUMENT_DEPTH + 1) > MAX_ARGUMENT_DEPTH + 1


def _non_finite(values: Any) -> bool:
    """Whether a NaN or an infinity is anywhere in ``values`` (no JSON number is; BFCL's tools never take one)."""
    stack = [values]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, complex):
            if not (math.isfinite(item.real) and math.isfinite(item.imag)):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
    return False


NON_FINITE = "an argument is NaN or infinite (NaN, Infinity, or a number such as 1e400 that overflows)"


@dataclass(frozen=True)
class Call:
    """A well-formed call: a function name and literal arguments."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        """The call as a BFCL call string (keyword arguments as given)."""
        parts = [repr(a) for a in self.args]
        parts += [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.name}({', '.join(parts)})"


@dataclass(frozen=True)
class MalformedCall:
    """Input that is not an acceptable call; ``raw`` is kept (truncated) for the record."""

    raw: str
    reason: str


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + f"...(+{len(text) - limit} chars)"


def parse_call(call: Any) -> Call | MalformedCall:
    """Parse one call (string or object); never raises on bad input.

    String parses are cached, so the returned ``Call`` may be shared: treat it
    as read-only (copy its arguments before handing them to code that mutates).
    """
    if isinstance(call, str):
        return _parse_string_cached(call) if len(call) <= 4096 else _parse_string(call)
    if isinstance(call, dict):
        return _parse_object(call)
    return MalformedCall(_short(repr(call)), f"a call must be a string or an object, not {type(call).__name__}")


@functools.lru_cache(maxsize=65_536)
def _parse_string_cached(text: str) -> Call | MalformedCall:
    return _parse_string(text)


NOT_PLAIN = ("Python would read it as another name (Unicode compatibility characters); names must be written "
             "as the tools spell them")


def _plain(name: str) -> bool:
    """A name Python reads as written (NFKC leaves it alone): ``µ`` (MICRO SIGN) is read as ``μ``."""
    return name.isascii() or unicodedata.normalize("NFKC", name) == name


def respelled_name(node: ast.Call, source: str) -> str | None:
    """The first name in a call whose source text differs from the name :mod:`ast` gives it, else None.

    ``ast`` NFKC-normalises identifiers: ``ｔｏｕｃｈ(...)`` (fullwidth) or
    ``𝗍ouch(...)`` parse as ``touch``.  A runtime would not dispatch them, and
    the same names in JSON are not ``touch`` either, so identifiers must
    compare exactly as written: callers refuse such a call.
    """
    if source.isascii():  # NFKC leaves ASCII alone
        return None
    if isinstance(node.func, ast.Name):
        written = ast.get_source_segment(source, node.func)
        if written != node.func.id:
            return written or "?"
    for kw in node.keywords:
        if kw.arg is None:
            continue
        written = (ast.get_source_segment(source, kw) or "").split("=", 1)[0].strip()
        if written != kw.arg:
            return written or "?"
    return None


def _parse_string(text: str) -> Call | MalformedCall:
    if len(text) > MAX_CALL_CHARS:
        return MalformedCall(_short(text), f"call string longer than {MAX_CALL_CHARS} characters")
    source = text.strip()
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
        return MalformedCall(_short(text), f"not a Python call expression ({type(e).__name__})")
    node = tree.body
    if not isinstance(node, ast.Call):
        return MalformedCall(_short(text), f"not a call but {type(node).__name__}")
    if not isinstance(node.func, ast.Name):
        return MalformedCall(
            _short(text), f"the callee must be a bare function name, not {type(node.func).__name__}"
        )
    respelled = respelled_name(node, source)
    if respelled is not None:
        return MalformedCall(_short(text), f"the name {respelled!r} is not plain: {NOT_PLAIN}")
    args: list[Any] = []
    for a in node.args:
        if isinstance(a, ast.Starred):
            return MalformedCall(_short(text), "star-arguments are not allowed")
        value = _literal(a)
        if isinstance(value, _NotLiteral):
            return MalformedCall(_short(text), f"positional argument {len(args)} is not a literal")
        args.append(value)
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            return MalformedCall(_short(text), "**-arguments are not allowed")
        if kw.arg in kwargs:
            return MalformedCall(_short(text), f"argument {kw.arg!r} given twice")
        value = _literal(kw.value)
        if isinstance(value, _NotLiteral):
            return MalformedCall(_short(text), f"argument {kw.arg!r} is not a literal")
        kwargs[kw.arg] = value
    if (args or kwargs) and _too_deep([*args, *kwargs.values()]):
        return MalformedCall(_short(text), f"arguments nested deeper than {MAX_ARGUMENT_DEPTH} levels")
    if (args or kwargs) and _non_finite([*args, *kwargs.values()]):
        return MalformedCall(_short(text), NON_FINITE)
    return Call(node.func.id, tuple(args), kwargs)


class _NotLiteral:
    pass


def _literal(node: ast.AST) -> Any:
    # `...` is a Python literal but no value a tool takes (and renders as `Ellipsis`, which is not one)
    if any(isinstance(n, ast.Constant) and n.value is Ellipsis for n in ast.walk(node)):
        return _NotLiteral()
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError, OverflowError):
        return _NotLiteral()


def _parse_object(obj: dict[str, Any]) -> Call | MalformedCall:
    if "function" in obj and isinstance(obj["function"], dict):
        obj = obj["function"]
    name = obj.get("name")
    if nesting_depth(obj, MAX_ARGUMENT_DEPTH + 2) > MAX_ARGUMENT_DEPTH + 2:
        # Checked before anything recursive (json.dumps, repr, copies) touches it.
        shown = name if isinstance(name, str) else "?"
        return MalformedCall(_short(f"{shown}(<nested deeper than {MAX_ARGUMENT_DEPTH} levels>)"),
                             f"arguments nested deeper than {MAX_ARGUMENT_DEPTH} levels")
    raw = _short(json.dumps(obj, default=str))
    if name is None and isinstance(obj.get("malformed"), str):
        # A marker left by ace_env.modelout for model output that is not a call.
        return MalformedCall(_short(str(obj.get("raw", ""))), obj["malformed"])
    if not isinstance(name, str) or not name.isidentifier():
        return MalformedCall(raw, "the call object needs a 'name' that is an identifier")
    if not _plain(name):
        return MalformedCall(raw, f"the name {name!r} is not plain: {NOT_PLAIN}")
    arguments = obj.get("arguments", {})
    if isinstance(arguments, str):
        if len(arguments) > MAX_CALL_CHARS:
            return MalformedCall(raw, f"arguments longer than {MAX_CALL_CHARS} characters")
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (json.JSONDecodeError, RecursionError) as e:
            return MalformedCall(raw, f"'arguments' is not valid JSON ({e.__class__.__name__})")
    if not isinstance(arguments, dict):
        return MalformedCall(raw, "'arguments' must be an object")
    if not all(isinstance(k, str) and k.isidentifier() for k in arguments):
        return MalformedCall(raw, "argument names must be identifiers")
    respelled = next((k for k in arguments if not _plain(k)), None)
    if respelled is not None:
        return MalformedCall(raw, f"the name {respelled!r} is not plain: {NOT_PLAIN}")
    if arguments and _too_deep(arguments.values()):
        return MalformedCall(raw, f"arguments nested deeper than {MAX_ARGUMENT_DEPTH} levels")
    if arguments and _non_finite(list(arguments.values())):
        return MalformedCall(raw, NON_FINITE)
    return Call(name, (), dict(arguments))
