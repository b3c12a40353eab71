"""τ²'s agent as ACE prompts it and reads it: τ²'s own agent instruction and system prompt around the
domain policy, and a policy's answer turned into the OpenAI message τ²'s orchestrator takes.

Shared by free-running τ² evaluation (:mod:`train.tau2_eval`) and gold-prefix scoring (τ²'s entry's
``gold_prefix``, :mod:`ace_env.tau2.goldprefix`), so both ask the agent the same way.  (Moved here from
``train/tau2_agent.py``, which keeps its names: it imports nothing from the layers above.)
"""

from __future__ import annotations

import functools
import json
from typing import Any

from ace_env.modelout import is_malformed, parse_message
from ace_env.tau2.env import new_environment
from ace_env.tau2.rollouts import to_call

#: τ²'s ``AGENT_INSTRUCTION`` (tau2/agent/llm_agent.py, which imports litellm: the text is written here and
#: a test pins it to the installed file).
AGENT_INSTRUCTION = """
You are a customer service agent that helps the user according to the <policy> provided below.
In each turn you can either:
- Send a message to the user.
- Make a tool call.
You cannot do both at the same time.

Try to be helpful and always follow the policy. Always make sure you generate valid JSON only.
""".strip()

#: τ²'s ``SYSTEM_PROMPT`` of its ``LLMAgent`` (same file).
SYSTEM_PROMPT = """
<instructions>
{agent_instruction}
</instructions>
<policy>
{domain_policy}
</policy>
""".strip()

#: The tool name a call gets when the policy's call could not be read at all.
MALFORMED_NAME = "malformed_call"


@functools.cache
def agent_system_prompt(domain: str) -> str:
    """τ²'s agent system prompt for a domain: its instruction and the domain policy (policy.md)."""
    return SYSTEM_PROMPT.format(agent_instruction=AGENT_INSTRUCTION, domain_policy=new_environment(domain).policy)


def agent_message(message: dict[str, Any]) -> dict[str, Any]:
    """A policy's answer as ``run_dialogue`` takes it: its text and its calls as OpenAI ``tool_calls``.

    Calls are read by :func:`ace_env.modelout.parse_message` (never evaluated): an object call keeps its
    arguments; a python-list call string is read with ``ast`` (:func:`ace_env.tau2.rollouts.to_call`); a
    malformed one becomes a call whose arguments are not a JSON object, so it runs as an error step."""
    parsed = parse_message(message)
    calls = []
    for k, c in enumerate(parsed.calls):
        if is_malformed(c):
            name, args = MALFORMED_NAME, "malformed: " + str(c.get("raw", ""))[:500]
        elif isinstance(c, dict):
            name, args = c["name"], c.get("arguments", {})
        else:
            tc = to_call(c)
            name, args = tc.name, tc.arguments
        calls.append({"id": f"agent_call_{k}", "type": "function",
                      "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}})
    text = parsed.text if parsed.calls else (message.get("content") or "")
    out: dict[str, Any] = {"role": "assistant", "content": (text or "").strip()}
    if calls:
        out["tool_calls"] = calls
    return out


__all__ = ["AGENT_INSTRUCTION", "MALFORMED_NAME", "SYSTEM_PROMPT", "agent_message", "agent_system_prompt"]
