"""Policies: what answers a conversation.  One interface, three kinds.

``hf:<path-or-name>``
    a local transformers model (default ``hf:smollm2-135m``, prepared by
    ``ace model prepare``), see :mod:`train.policies.hf`;
``openai:<model>@<base_url>[,<base_url>...]``
    OpenAI-compatible endpoints (vLLM, SGLang, a hosted API; several
    comma-separated base URLs share the conversations), see
    :mod:`train.policies.openai`;
``sim:<weakness.toml>``
    the simulated agent with planted weaknesses (``sim:`` alone: the default
    slip rate), see :mod:`train.policies.sim`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from train.policies.base import Conversation, GenerationConfig, Policy, PolicyError, Reply
from train.policies.hf import HFPolicy  # imports torch only when a model is loaded
from train.policies.openai import OpenAIPolicy, RequestConfig, parse_endpoints, split_spec
from train.policies.sim import SimPolicy

DEFAULT_POLICY = "hf:smollm2-135m"
KINDS = ("hf", "openai", "sim")


def endpoint_count(spec: str) -> int:
    """How many endpoints an ``openai:`` spec lists (1 for the other kinds)."""
    return len(parse_endpoints(spec)) if spec.partition(":")[0] == "openai" else 1


def check_spec(spec: str) -> str:
    """Refuse, before any work and without a request, an ``openai:`` spec that cannot be used (a malformed
    base URL, credentials in it); other kinds are checked when loaded."""
    if spec.partition(":")[0] == "openai":
        parse_endpoints(spec)
    return spec


def load_policy(spec: str, compact_tools: bool = True, endpoint: int | None = None,
                tasks: Sequence[Any] | None = None, request: RequestConfig | None = None) -> Policy:
    """The policy a spec names (loading a model can take seconds).

    ``endpoint`` (``openai:`` only) keeps one of its base URLs; the policy's spec stays the whole one.
    ``request`` (``openai:`` only): each request's timeout and retries (default: ``ACE_REQUEST_TIMEOUT`` /
    ``ACE_REQUEST_RETRIES``, else :class:`RequestConfig`'s).
    ``tasks`` (``sim:`` only): the tasks it will play, whose environment checks the weakness file's tool
    names (BFCL's functions when not given).
    """
    kind, sep, rest = spec.partition(":")
    if not sep or kind not in KINDS:
        raise PolicyError(
            f"policy {spec!r}: expected hf:<path-or-name>, openai:<model>@<base_url> or sim:<weakness.toml>"
        )
    if kind == "hf":
        if not rest:
            raise PolicyError("hf: needs a model folder or name, e.g. hf:smollm2-135m")
        return HFPolicy(spec, rest, compact_tools=compact_tools)
    if kind == "openai":
        return OpenAIPolicy.from_spec(spec, endpoint, request or RequestConfig.from_env())
    return SimPolicy.from_spec(spec, tasks)


def policy_name(spec: str) -> str:
    """A short name of a policy for graph scopes (no '/'): ``hf:/runs/sft`` -> ``hf-sft``."""
    kind, _, rest = spec.partition(":")
    if kind == "openai":
        rest = split_spec(spec)[0] or rest
    elif rest:
        rest = Path(rest.rstrip("/")).name
        if kind == "sim":
            rest = Path(rest).stem
    name = f"{kind}-{rest}" if rest else kind
    return re.sub(r"[^A-Za-z0-9_.:-]+", "_", name)


__all__ = [
    "DEFAULT_POLICY",
    "Conversation",
    "GenerationConfig",
    "Policy",
    "PolicyError",
    "Reply",
    "RequestConfig",
    "check_spec",
    "endpoint_count",
    "load_policy",
    "policy_name",
]
