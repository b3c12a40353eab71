"""Rollouts spread over a Ray cluster (``ace rollout --ray ADDRESS``), with the rows of a local run.

The run's (task, sample) pairs, in their canonical order, are cut into shards
of ``shard_size`` conversations; each shard runs on a :class:`RolloutWorker`
actor (its own policy and :class:`train.engine.RolloutEngine`, the batch
size of the run), at most ``in_flight`` shards per worker at a time.  Workers:

* ``openai:<model>@<url1>,<url2>,...``: one actor per endpoint (the actor
  does network I/O, so it reserves no CPU); the endpoints share the shards,
  a free one takes the next;
* any other policy (``sim:``, ``hf:``): ``workers`` actors, one CPU each
  (default: the cluster's CPUs).

Rows come back shard by shard and are put in the canonical order
(:func:`train.engine.in_order`), as a local run's are, so for a policy whose
answers do not depend on batching (``sim:``, or a seeded server) the file is
byte for byte the local one (a test compares them).
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any, Callable, Iterator

from ace_env.errors import ConfigError
from ace_env.scaleout import connect
from ace_env.tasks import Task
from train.engine import RolloutConfig, RolloutEngine, rollout_id, rollout_samples
from train.policies import endpoint_count, load_policy
from train.policies.base import PolicyError

log = logging.getLogger(__name__)


class RolloutWorker:
    """A Ray actor: one policy (one endpoint of an ``openai:`` spec) and its rollout engine."""

    def __init__(self, spec: str, config: RolloutConfig, compact_tools: bool, endpoint: int | None):
        self.policy = load_policy(spec, compact_tools=compact_tools, endpoint=endpoint, request=config.request)
        self.engine = RolloutEngine(self.policy, config)

    def run(self, tasks: dict[str, Task], samples: list[tuple[str, int]]) -> list[dict[str, Any]]:
        return list(self.engine.run_samples([(tasks[tid], g) for tid, g in samples]))

    def close(self) -> None:
        self.policy.close()


def ray_rollouts(spec: str, tasks: list[Task], config: RolloutConfig, address: str, compact_tools: bool = True,
                 workers: int | None = None, shard_size: int | None = None, in_flight: int = 2,
                 on_done: Callable[[dict[str, Any]], None] | None = None) -> Iterator[dict[str, Any]]:
    """Roll ``spec`` out on ``tasks`` on the Ray cluster at ``address``; rows in arrival order, shard by shard."""
    if workers is not None and workers < 1:
        raise ConfigError(f"--ray-workers must be at least 1, not {workers}")
    shard_size = shard_size or 2 * config.batch_size
    if shard_size < 1 or in_flight < 1:
        raise ConfigError("shard size and shards in flight must be at least 1")
    samples = [(t.id, g) for t, g in rollout_samples(tasks, config.n_per_task)]
    shards = deque(samples[i:i + shard_size] for i in range(0, len(samples), shard_size))
    ray, owns = connect(address)
    actors: list[Any] = []
    try:
        endpoints = endpoint_count(spec) if spec.startswith("openai:") else 0
        if endpoints:
            actor_cls = ray.remote(num_cpus=0)(RolloutWorker)
            actors = [actor_cls.remote(spec, config, compact_tools, i) for i in range(endpoints)]
        else:
            n = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
            actor_cls = ray.remote(num_cpus=1)(RolloutWorker)
            actors = [actor_cls.remote(spec, config, compact_tools, None) for _ in range(n)]
        log.info("rolling out %s on Ray at %s: %d workers, %d shards", spec, address, len(actors), len(shards))
        tasks_ref = ray.put({t.id: t for t in tasks})
        running: dict[Any, Any] = {}  # object ref -> actor
        load = {i: 0 for i in range(len(actors))}

        def fill() -> None:
            for i, actor in enumerate(actors):
                while shards and load[i] < in_flight:
                    running[actor.run.remote(tasks_ref, shards.popleft())] = i
                    load[i] += 1

        fill()
        while running:
            done, _ = ray.wait(list(running), num_returns=1)
            for ref in done:
                load[running.pop(ref)] -= 1
                try:
                    rows = ray.get(ref)
                except ray.exceptions.RayError as e:
                    cause = getattr(e, "cause", None)
                    if isinstance(cause, PolicyError):  # the worker's own one-line error (an endpoint down)
                        raise type(cause)(str(cause)) from e
                    raise PolicyError(f"a rollout worker on Ray failed: {str(e).splitlines()[0]}") from e
                for row in rows:
                    if on_done:
                        on_done(row)
                    yield row
            fill()
        for actor in actors:
            ray.get(actor.close.remote())
    finally:
        for actor in actors:
            ray.kill(actor)
        if owns:
            ray.shutdown()


def expected_ids(tasks: list[Task], n_per_task: int) -> list[str]:
    """The rollout ids of a run, in the canonical order."""
    return [rollout_id(t, g) for t, g in rollout_samples(tasks, n_per_task)]
