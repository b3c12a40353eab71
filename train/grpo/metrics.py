"""The metrics file of a GRPO run: one JSON line per optimizer step, written by a TRL callback."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from train.grpo.rollout import ACERollout


class MetricsWriter:
    """Writes one JSON line per optimizer step (a TRL callback): the metrics file of ``--metrics-out``."""

    def __init__(self, path: Path | None, rollout: ACERollout):
        self.path = path
        self.rollout = rollout
        self._step_start = 0.0
        self.lines: list[dict[str, Any]] = []

    def callback(self) -> Any:
        from transformers import TrainerCallback

        writer = self

        class _Callback(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                writer._step_start = time.perf_counter()

            def on_log(self, args, state, control, logs=None, **kwargs):
                if not logs or "loss" not in logs or not writer.rollout.records or not state.is_world_process_zero:
                    return
                writer.write(state.global_step, logs, time.perf_counter() - writer._step_start)

        return _Callback()

    def write(self, step: int, logs: dict[str, Any], seconds_step: float) -> None:
        rec = self.rollout.records[-1]
        fill = rec.fill.as_dict()
        line = {
            "step": step,
            "reward_mean": fill["reward_mean"],
            "reward_std": fill["reward_std"],
            "groups_sampled": fill["groups_sampled"],
            "groups_kept": fill["groups_kept"],
            "kept_fraction": fill["kept_fraction"],
            "capped": fill["capped"],
            "loss": float(logs["loss"]),
            "seconds_generate": round(rec.seconds_generate, 3),
            "seconds_verify": round(rec.seconds_verify, 3),
            "seconds_train": round(max(0.0, seconds_step - rec.seconds_generate - rec.seconds_verify), 3),
            **{k: fill[k] for k in ("groups_all_pass", "groups_all_fail", "groups_mixed") if k in fill},
        }
        self.lines.append(line)
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")

