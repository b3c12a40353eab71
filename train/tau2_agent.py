"""τ²'s agent as ACE prompts it and reads it: :mod:`ace_env.tau2.agent` (moved there, below the training layer,
so τ²'s gold-prefix transcript is built by its environment); its names are kept here."""

from __future__ import annotations

from ace_env.tau2.agent import AGENT_INSTRUCTION, MALFORMED_NAME, SYSTEM_PROMPT, agent_message, agent_system_prompt

__all__ = ["AGENT_INSTRUCTION", "MALFORMED_NAME", "SYSTEM_PROMPT", "agent_message", "agent_system_prompt"]
