"""Every draft a τ² strategy makes over a domain's seeds, for tests that check a property of all of them."""

from __future__ import annotations

import random
from collections.abc import Collection, Iterator
from typing import Any

from ace_env.tau2.tasks import Tau2Task, load_tasks
from synth.registry import table_for


def every_draft(domain: str, strategy: str, seeds: Collection[str] | None = None) -> Iterator[tuple[Tau2Task, tuple[str, str], Any]]:
    """(seed, target, draft) for every adjacent pair of agent actions of every seed of ``domain`` (only the τ² ids in
    ``seeds``, if given) where the strategy makes a draft (strength 0.5, ``random.Random(0)``)."""
    build = table_for(Tau2Task)[strategy]
    for seed in load_tasks(domain):
        if seeds is not None and seed.tau2_id not in seeds:
            continue
        acts = seed.agent_actions
        for target in sorted({(a.name, b.name) for a, b in zip(acts, acts[1:])}):
            draft = build(seed, target, 0.5, random.Random(0))
            if draft is not None:
                yield seed, target, draft
