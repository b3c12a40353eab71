"""How much of each environment the skill taxonomy covers (issue 23: "tag τ² tools with the taxonomy; report
coverage"), τ²-bench's domains beside BFCL multi-turn's.

Per environment: the agent tools with base skills in ``ace_graph/skills.toml`` (a tool without them cannot be
tagged: ``ace ingest`` refuses its tasks), the oracle steps tagged, the skills used and the share of steps
that depend on an earlier step (a data flow: an argument found only in an earlier output; a precondition: the
earlier step's removal changes this one's output) — the dependencies compositions are made of.

    python benchmarks/taxonomy_coverage.py
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ace_env import bfcl  # noqa: E402
from ace_env.tau2.tasks import load_tasks  # noqa: E402
from ace_graph.tagger import tag_task  # noqa: E402
from ace_graph.taxonomy import tool_skills  # noqa: E402


def coverage(name: str, tools: set[str], tasks: list) -> dict:
    known = tool_skills()
    covered = {t for t in tools if known.get(t)}
    row = {"environment": name, "tools": len(tools), "tools covered": len(covered), "tasks": len(tasks),
           "steps": 0, "skills used": 0, "steps with a dependency": 0, "data_flow": 0, "precondition": 0}
    if covered != tools:
        row["missing"] = sorted(tools - covered)
        return row
    used: Counter[str] = Counter()
    for task in tasks:
        for tag in tag_task(task):
            if tag.tool is None:
                continue
            row["steps"] += 1
            used.update(tag.skills)
            row["steps with a dependency"] += bool(tag.depends_on)
            kinds = set(tag.dependency_kinds)
            row["data_flow"] += "data_flow" in kinds
            row["precondition"] += "precondition" in kinds
    row["skills used"] = len(used)
    return row


def main() -> None:
    rows = [coverage("bfcl (base)", set(bfcl.functions()), list(bfcl.load_tasks("base")))]
    for domain in ("airline", "retail", "telecom"):
        tasks = list(load_tasks(domain))
        tools = {t["function"]["name"] if "function" in t else t["name"] for t in tasks[0].tools}
        rows.append(coverage(f"tau2:{domain}", tools, tasks))
    keys = ["environment", "tools", "tools covered", "tasks", "steps", "skills used", "steps with a dependency",
            "data_flow", "precondition"]
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in keys) + " |")
    for r in rows:
        if "missing" in r:
            print(f"{r['environment']}: not in the taxonomy: {', '.join(r['missing'])}")


if __name__ == "__main__":
    main()
