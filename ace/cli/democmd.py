"""``ace demo``: the main job end to end on whatever Neo4j ACE is configured for.

The work is done by the functions of :mod:`ace.demo`, which return data; this
module only prints it (or, with --json, dumps it).
"""

from __future__ import annotations

import json
from dataclasses import replace

import typer

from ace import demo as run
from ace.cli import app
from ace.cli.graphcmd import with_store
from ace.cli.options import config_options, json_option
from ace.cli.render import console, esc, table
from ace_env.sim import load_weakness
from ace_graph.config import neo4j_settings
from ace_graph.db import apply_schema
from ace_graph.errors import ConfigError


def _f(x: float) -> str:
    return f"{x:.2f}"


#: DemoConfig's weakness files, whose flags stand first in the help (the others after --json)
PLANTED = ("weakness", "tau2_weakness")


@app.command("demo")
@config_options(run.DemoConfig, include=PLANTED, param="planted", in_place=True)
@config_options(run.DemoConfig, exclude=PLANTED, names={"n": ("--n", "--rollouts"), "experiment": ("--experiment", "-e")})
def demo(
    planted: run.DemoConfig = None,  # type: ignore[assignment]
    as_json: bool = json_option("Print every stage's result as one JSON object."),
    config: run.DemoConfig = None,  # type: ignore[assignment]
) -> None:
    """Run ACE's main job: replay BFCL, simulate a weak agent, mine its weak compositions in Neo4j,
    synthesize tasks at the frontier, advance the curriculum, run round 1; then the same mining on a
    simulated agent on τ²-bench airline (its own experiment, E-tau2; `--tau2-n 0` leaves it out).

    Needs a reachable Neo4j (`ace db start`, or NEO4J_URI for an external one).
    `--rollouts` is the older name of `--n` (kept as an alias).
    """
    config = replace(config, weakness=planted.weakness, tau2_weakness=planted.tau2_weakness)
    weakness, tau2_weakness = config.weakness, config.tau2_weakness
    c = console()
    say = (lambda *a: None) if as_json else c.print
    categories = [x.strip() for x in config.categories.split(",") if x.strip()]
    load_weakness(weakness)  # a bad file is refused now, not after the schema and the replay
    if config.tau2_n:
        run.check_tau2_weakness(tau2_weakness)  # a bad file is refused now, not after the BFCL part
    settings = neo4j_settings()
    results: dict = {}

    def work(store):
        applied = apply_schema(store.driver, store.database)
        agent = store.driver.get_server_info().agent
        results["neo4j"] = {"agent": agent, "uri": settings.uri, "schema_statements": len(applied)}
        say(f"[bold]1. Neo4j[/] {esc(agent)} at {esc(settings.uri)}: schema applied ({len(applied)} statements)")

        replay = results["replay"] = run.replay(categories)
        say(table("2. BFCL multi-turn: ground truth replayed through ACE's executor and verifier",
                  ("category", "tasks", "passed", "failed", "errors", "tasks/s"),
                  [list(r.values()) for r in replay], right=("tasks", "passed", "failed", "errors", "tasks/s")))

        seeds = run.seed_tasks()
        r0 = results["round_0"] = run.simulate_and_ingest(store, seeds, config.experiment, "round-0",
                                                          config.n, config.seed, weakness)
        d = r0["ingest"]
        say(esc(f"3. Skill graph: {config.n} simulated rollouts ({weakness.name}) → scope {d['scope']}: "
                f"{d['created']} stored now, {d['already_stored']} already stored, {d['steps']} steps, {d['seconds']} s"))
        scope0 = r0["scope"]

        w = results["weaknesses"] = run.weaknesses(store, scope0, weakness)
        _say_weak(w, say)
        say(table("Frontier (skill level): strong prerequisites, weak composition",
                  ("from → to", "n", "from success", "composition success", "fragility low", "seed tasks"),
                  [(f"{r['from']} → {r['to']}", r["n"], _f(r["from_success"]), _f(r["composition_success"]),
                    _f(r["fragility_low"]), len(r["seed_tasks"])) for r in w["frontier"]]))

        s = run.synthesize_round(store, {t.id: t for t in seeds}, config.experiment, scope0, config.seed,
                                 config.synth, weakness)
        results["synthesis"] = {k: v for k, v in s.items() if k != "tasks"}
        say(table(f"4. Synthesized from the frontier of {scope0}: {len(s['tasks'])} verified tasks "
                  f"from {s['attempted']} attempts in {s['seconds']:.1f} s",
                  ("target", "strategy", "tasks", "learnable (policy sometimes passes)", "mean pass rate"),
                  [(g["target"].replace(">", " → "), g["strategy"], g["tasks"], g["learnable"], _f(g["mean_pass_rate"]))
                   for g in s["groups"]]))
        say(f"Reflection: {s['reflections']} plan reviews, {s['plans_adjusted']} plans adjusted or retired.")
        for fmt, e in s["exports"].items():
            say(esc(f"  exported {fmt}: {e.get('written')} → {e.get('out')}"))
        say(esc(f"  tasks: {s['file']}"))

        if not s["tasks"]:  # round 1 rolls out on the synthesized tasks: without them it has nothing to run
            raise ConfigError(f"no task was synthesized from {scope0}: at {config.n} simulated rollouts its tool-level "
                              f"frontier holds no composition the graph tells apart from its tools' own weakness; "
                              f"rerun with more rollouts (--n, default 4000)")
        results["curriculum"] = [_curriculum(store, config.experiment, scope0, say)]
        r1 = results["round_1"] = run.round_one(store, seeds, s["tasks"], config.experiment, config.n,
                                                config.seed, weakness)
        d = r1["ingest"]
        say(esc(f"5. Round 1: curriculum mix of {r1['mix']} tasks ({r1['focus']} focus, {r1['replay']} replay; "
                f"tool drift from the seeds {r1['drift']:.2f}, cap {r1['max_drift']}); {config.n} rollouts of the "
                f"same simulated policy → {d['scope']}: {d['created']} stored now, {d['already_stored']} already stored"))
        results["curriculum"].append(_curriculum(store, config.experiment, r1["scope"], say))

        moved = results["frontier_moved"] = run.frontier_moved(store, scope0, r1["scope"])

        def cell(x):
            return "—" if x is None else f"{x['n']} / {_f(x['composition_success'])} / {_f(x['fragility_low'])}"

        say(table("How the tool-level frontier moved from round 0 to round 1",
                  ("from → to", "round 0: n / success / fragility low", "round 1: n / success / fragility low"),
                  [(f"{m['from']} → {m['to']}", cell(m["round_0"]), cell(m["round_1"])) for m in moved]))

        if config.tau2_n:
            t = results[run.SECOND.name] = run.tau2_scope(store, config.experiment, config.tau2_n, config.seed, tau2_weakness)
            d = t["ingest"]
            say(esc(f"6. τ²-bench, the second environment: {config.tau2_n} simulated rollouts on {t['tasks']} "
                    f"({t['task_count']} tasks, {tau2_weakness.name}) → scope {d['scope']}: {d['created']} stored now, "
                    f"{d['already_stored']} already stored, {d['steps']} steps; {t['seconds']} s in all"))
            say(esc("   (the simulated agent's slips include reads that leave τ²'s end state as the gold's, so this "
                    "section is judged with ACE's stricter step rules, `ace ingest --strict`)"))
            _say_weak(t["weaknesses"], say)

        r = results["real_agents"] = run.real_agents(store, config.experiment)
        if not r["scopes"]:
            say(esc(f"7. Real agents: no τ²-bench result files at {r['missing']}; section left out"))
        else:
            say(esc(f"7. Real agents: τ²-bench's published result files, judged by τ²'s own rules → {r['experiment']} "
                    "(a scope per model and checkpoint; gpt-4.1-sft is gpt-4.1's second checkpoint)"))
            say(table("Real agents: ACE's verdicts beside τ²'s recorded rewards, and each one's weakest compositions",
                      ("scope", "conversations", "τ² passed", "ACE passed", "agree", "weakest tool compositions "
                       "(failures / n right after the first)"),
                      [(x["scope"], x["with_reference"], x["reference_passed"], x["ace_passed"], x["agree"],
                        "; ".join(f"{w['from']} → {w['to']} {w['failures']}/{w['n']}" for w in x["weakest"]) or "—")
                       for x in r["scopes"]]))
            pooled = r["pooled"]
            say(esc(f"   All {pooled['files']} files in one scope, {pooled['scope']} ({pooled['with_reference']} "
                    f"conversations; {pooled['agree']} verdicts agree with τ²): one agent's file is one trial of 20-50 "
                    "tasks, too few failures for any composition to stand out from its tool; pooled, the estimator's "
                    f"weak compositions (seen at least {pooled['min_support']} times; `ambiguous`: it cannot yet tell "
                    "the composition from the second tool's own weakness):"))
            say(table("Real agents pooled: weak tool compositions",
                      ("from → to", "n", "failures", "composition success", "to elsewhere", "verdict"),
                      [(f"{w['from']} → {w['to']}", w["n"], w["failures"], _f(w["composition_success"]),
                        _f(w["target_success_elsewhere"]), w["verdict"]) for w in pooled["weak"]]))

    with_store(work)
    if as_json:
        print(json.dumps(results, default=str))
    if any(r["failed"] for r in results["replay"]):
        raise typer.Exit(1)


def _say_weak(w: dict, say) -> None:
    """The weakest compositions :func:`ace.demo.weaknesses` found, each marked planted or not."""
    say(table("Weakest tool compositions found (b fails more often right after a than elsewhere)",
              ("from → to", "n", "composition success", "to elsewhere", "fragility (95% low)", "planted?"),
              [(f"{r['from']} → {r['to']}", r["n"], _f(r["composition_success"]), _f(r["target_success_elsewhere"]),
                f"{_f(r['fragility'])} ({_f(r['fragility_low'])})", "yes" if r["planted"] else "no")
               for r in w["weak_compositions"]]))
    say(esc(f"Planted compositions recovered: {len(w['recovered'])}/{len(w['planted'])}; tool-wide weaknesses "
            f"({', '.join(w['weak_tools'])}) reported as compositions: {w['weak_tools_as_compositions']}"))


def _curriculum(store, experiment: str, scope: str, say) -> dict:
    report = run.curriculum(store, experiment, scope)
    if report is None:
        say(esc(f"Curriculum of {experiment!r} already advanced from {scope}; not counting it twice."))
        return {"scope": scope, "skipped": True}
    s = report.states
    say(esc(f"Curriculum round {report.round} from {scope}: {len(report.decisions)} decisions; "
            f"{s['active']} active, {s['mastered']} at or above the mastery bar, {s['locked']} locked "
            f"(`ace curriculum status -e {experiment}`). Nothing is trained in this demo: the simulated "
            "policy is the same every round, so a unit above the bar was strong already, not learned."))
    return report.to_dict(decisions=False)
