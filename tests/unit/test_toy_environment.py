"""A third environment, the toy in tests/toyenv.py, registered as the others are and driven through the same
commands (``ace env replay``, ``ace sim rollouts``, ``ace eval`` free-running and through the gold prefix, ``ace
export``), with nothing outside its module; docs/environments.md says what it implements."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import toyenv

from ace.cli import main, rolloutcmd
from ace_env.environments import ToolEnvironment, environment_names, environment_of
from ace_env.errors import TaskLoadError
from ace_env.tasksets import environment_of_spec, load_every_task, load_task_set, parse_task_spec
from ace_graph import ingest as graph_ingest
from ace_graph.errors import ConfigError
from ace_graph.tagger import base_skills, clear_cache, tag_task
from ace_graph.taxonomy import tool_skills
from train import evaluation
from train.goldprefix import records, score_tasks, transcript
from train.policies import load_policy
from train.policies.base import Reply

DOC = Path(__file__).resolve().parents[2] / "docs" / "environments.md"


@pytest.fixture
def toy(monkeypatch):
    return toyenv.register(monkeypatch)


def test_its_spec_parses_and_loads_through_its_entry(toy):
    assert parse_task_spec("toy:counter, store").groups == ("counter", "store")
    assert environment_of_spec("toy") is toy and "toy" in environment_names()
    tasks = load_every_task("toy:counter")
    assert sorted(tasks) == ["toy:count_twice", "toy:put_then_incr"] and environment_of(tasks.values()) is toy
    assert list(load_task_set("toy", any_environment=True)) == [t.id for t in toyenv.TASKS]
    with pytest.raises(TaskLoadError, match="not supported by"):  # a command that takes the default's tasks only
        load_task_set("toy")
    with pytest.raises(TaskLoadError, match="unknown toy group 'nope'"):
        load_every_task("toy:nope")


def test_ace_env_replay_runs_its_gold(toy, capsys):
    assert main(["env", "replay", "toy", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {g: (c["tasks"], c["passed"], c["failed"]) for g, c in out.items()} == {"store": (2, 2, 0),
                                                                                    "counter": (2, 2, 0)}
    assert main(["env", "replay", "--tasks", "toy:counter"]) == 0
    assert "Toy key-value store gold replay (toy:counter)" in capsys.readouterr().out


def test_ace_env_replay_fails_a_wrong_gold(toy, monkeypatch, capsys):
    wrong = dataclasses.replace(toyenv.TASKS[2], expected=(("n", 3),))
    monkeypatch.setattr(toyenv, "TASKS", (*toyenv.TASKS[:2], wrong, toyenv.TASKS[3]))
    assert main(["env", "replay", "toy", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["counter"]["failed"] == 1


def test_ace_sim_rollouts_simulates_it_with_its_weakness_file(toy, tmp_path, capsys):
    out = tmp_path / "r.jsonl"
    args = ["sim", "rollouts", "--tasks", "toy:counter", "--n", "6", "--seed", "2", "--out", str(out), "--json",
            "--weakness", str(toyenv.weakness_file(tmp_path))]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 6 and {r["task_id"] for r in rows} <= {"toy:count_twice", "toy:put_then_incr"}
    # incr always slips to the wrong tool (error 1.0): every rollout has a slip, none on put
    assert all(r["meta"]["slips"] and all(s["tool"] == "incr" for s in r["meta"]["slips"]) for r in rows)
    assert report["with_slips"] == 6 and set(report["slips"]) == {"wrong_tool"}
    first = out.read_bytes()
    assert main([*args, "--force"]) == 0 and out.read_bytes() == first  # same seed, same file
    capsys.readouterr()
    bad = tmp_path / "bad.toml"
    bad.write_text('[[tool]]\nname = "grep"\nerror = 0.5\n')
    assert main(["sim", "rollouts", "--tasks", "toy", "--n", "2", "--out", str(tmp_path / "b.jsonl"),
                 "--weakness", str(bad)]) == 1
    assert "a toy tool" in capsys.readouterr().err


def test_the_tagger_reads_its_steps_and_its_own_tools_skills(toy):
    """Its `steps` reader and `tool_skills` table: tagged as τ²'s gold actions are, with no edit to skills.toml."""
    clear_cache()
    tags = tag_task(toyenv.TASKS[3])  # put(n, 5), incr(n), get(n): "Set n to 5, add one, and read n."
    assert [t.tool for t in tags] == ["put", "incr", "get"]
    assert tags[0].skills == ("create_state", "param_from_user") and tags[0].arg_sources["value"] == "user"
    assert tags[1].skills == ("arithmetic", "modify_state", "state_precondition")
    assert (tags[1].depends_on, tags[1].dependency_kinds) == ((0,), ("precondition",))  # without put, incr gives 1
    assert tags[2].depends_on == (0, 1)
    assert "put" in base_skills() and "put" not in tool_skills()
    assert {toy: 1}[toy] == 1  # an entry holding a table is still hashable, as the others are


def test_an_environments_tool_table_is_checked_against_the_taxonomy():
    assert tool_skills(own=[("toy", {"put": ("create_state",)})])["put"] == ("create_state",)
    with pytest.raises(ConfigError, match="toy environment's tool_skills: tool 'grep' has base skills already"):
        tool_skills(own=[("toy", {"grep": ("search",)})])  # a BFCL function: one Tool node per name
    with pytest.raises(ConfigError, match="maps to unknown skill 'flying'"):
        tool_skills(own=[("toy", {"put": ("flying",)})])
    with pytest.raises(ConfigError, match="list of 1-3 skill ids"):
        tool_skills(own=[("toy", {"put": ()})])


def test_its_verifier_fails_a_rollout_where_it_leaves_the_gold(toy):
    task = toyenv.TASKS[3]
    gold = ["put(key='n', value=5)", "incr(key='n')", "get(key='n')"]
    assert toyenv.verify(task, [gold], "r").reward == 1.0
    cases = {("get(key='?')", 1): "wrong_tool", ("incr(key='m')", 1): "wrong_argument",
             ("incr(key='n'", 1): "malformed_call", (None, 1): "stopped_early"}
    for (made, at), kind in cases.items():
        calls = gold[:at] + ([made] if made else [])
        v = toyenv.verify(task, [calls], "r")
        assert (v.reward, v.failing_oracle_step, v.attribution, v.matched_steps) == (0.0, at, kind, at), made
    v = toyenv.verify(task, [gold + ["put(key='n', value=0)"]], "r")  # the gold, then a call that undoes it
    assert (v.reward, v.attribution) == (0.0, "state_diverged")
    with pytest.raises(ValueError, match="list of lists"):
        toyenv.verify(task, "put()", "r")


def test_docs_say_what_an_environment_implements():
    """docs/environments.md names every field of ToolEnvironment, and the toy that proves the seam."""
    text = DOC.read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z_]+)`(?:, `([a-z_]+)`)?", text, re.MULTILINE))
    names = {n for pair in documented for n in pair if n}
    assert names == {f.name for f in dataclasses.fields(ToolEnvironment)}
    assert "tests/toyenv.py" in text and "ace_env/<name>/" in text


# --------------------------------------------------------------------------- gold-prefix scoring and export


def _weakness(tmp_path, text):
    path = tmp_path / "w.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_gold_prefix_scores_its_steps_through_its_entry(toy, tmp_path):
    """Its entry's gold_prefix: a transcript per task, and each answer judged by running it in the gold's place."""
    tr = transcript(toyenv.TASKS[3])
    assert [(s.flat, s.tool, s.call, s.prev) for s in tr.steps] == [
        (0, "put", "put(key='n', value=5)", None), (1, "incr", "incr(key='n')", 0), (2, "get", "get(key='n')", 1)]
    conv = tr.conversation(tr.steps[1])  # the prompt, the gold put and its real output
    assert [m["role"] for m in conv.messages] == ["system", "user", "assistant", "tool"]
    assert conv.messages[-1]["content"] == '{"key": "n", "value": 5}' and [t["function"]["name"] for t in conv.tools] \
        == ["put", "get", "incr"]
    never = _weakness(tmp_path, "[defaults]\nerror = 0.0\n")
    perfect = load_policy(f"sim:{never}", tasks=list(toyenv.TASKS))
    run = score_tasks(perfect, toyenv.TASKS, generate=True)
    assert run.summary()["steps"] == 9 and run.summary()["exact_match"] == 1.0 and run.prefix == "task-prompt"
    assert all(s.passed and s.exact for s in run.scores) and not run.skipped
    incr = _weakness(tmp_path, '[defaults]\nerror = 0.0\n[[tool]]\nname = "incr"\nerror = 1.0\nkind = "wrong_tool"\n')
    weak = load_policy(f"sim:{incr}", tasks=list(toyenv.TASKS))
    run = score_tasks(weak, toyenv.TASKS, generate=True)
    failed = {(s.task_id, s.flat): (s.tool, s.attribution, s.prev_tool, s.answer) for s in run.scores if not s.passed}
    assert failed == {("toy:count_twice", 0): ("incr", "wrong_tool", None, "[get(key='?')]"),
                      ("toy:count_twice", 1): ("incr", "wrong_tool", "incr", "[get(key='?')]"),
                      ("toy:put_then_incr", 1): ("incr", "wrong_tool", "put", "[get(key='?')]")}
    stored = {r.task_id: (r.reward, r.fail_tool, r.fail_prev_tool, r.detail)
              for r, _ in records(run.scores, {t.id: t for t in toyenv.TASKS}, "E/toy/0")}
    assert stored["toy:put_then_incr"] == (0.0, "incr", "put", "gold-prefix: 2 of 3 steps passed")
    assert stored["toy:put_get"] == (1.0, None, None, "gold-prefix: 2 of 2 steps passed")


def test_its_judge_reads_each_kind_of_answer(toy):
    tr = transcript(toyenv.TASKS[3])
    step = tr.steps[1]  # incr(key='n') after put(n, 5)

    def judged(message, finish="stop"):
        return toyenv.judge_reply(tr, step, Reply(message, finish_reason=finish))

    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "incr", "arguments": '{"key": "n"}'}}]}
    assert (judged(call).passed, judged(call).exact) == (True, True)
    text = {"role": "assistant", "content": "[incr(key='m')]"}
    assert (judged(text).passed, judged(text).tool_right, judged(text).attribution) == (False, True, "wrong_argument")
    assert judged({"role": "assistant", "content": "[incr(key='n'"}).attribution == "malformed_call"
    assert judged({"role": "assistant", "content": "Done."}).attribution == "stopped_early"
    assert judged({"role": "assistant", "content": ""}, "error").attribution == "inference_error"


def test_ace_eval_gold_prefix_runs_it(toy, tmp_path, monkeypatch, capsys):
    """`ace eval --tasks toy --gold-prefix --generate` with a sim: policy: every step scored and written; the
    graph (Neo4j, in the integration tests) is replaced by a recorder of what would be ingested."""
    ingested = {}

    def ingest(store, recs, by_id, experiment, name, checkpoint, mode):
        ingested.update({r.task_id: r for r, _ in recs})
        return SimpleNamespace(scope="E/sim/0", read=len(ingested), to_dict=lambda: {"rollouts": len(ingested)})

    monkeypatch.setattr(rolloutcmd, "neo4j_settings", lambda: SimpleNamespace(database="neo4j"))
    monkeypatch.setattr(rolloutcmd, "get_driver", lambda settings: SimpleNamespace(close=lambda: None))
    monkeypatch.setattr(rolloutcmd, "refuse_changes_to_stored_tasks", lambda store, tasks, spec: None)
    monkeypatch.setattr(evaluation, "ingest_records", ingest)
    monkeypatch.setattr(evaluation, "_tables", lambda store, scope, *a: {
        "scope": scope, "skills": [], "tools": [], "weak_compositions": []})
    out = tmp_path / "toy.gold-prefix.jsonl"
    weakness = toyenv.weakness_file(tmp_path)  # incr always slips to the wrong tool
    assert main(["eval", "--policy", f"sim:{weakness}", "--tasks", "toy:counter", "--gold-prefix", "--generate",
                 "-e", "E", "-c", "0", "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["steps"], result["prefix"], result["mode"]) == (5, "task-prompt", "gold-prefix")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["task_id"], r["tool"], r["passed"]) for r in rows] == [
        ("toy:count_twice", "incr", False), ("toy:count_twice", "incr", False),
        ("toy:put_then_incr", "put", True), ("toy:put_then_incr", "incr", False), ("toy:put_then_incr", "get", True)]
    assert result["exact_match"] == 0.4 and {r["attribution"] for r in rows if not r["passed"]} == {"wrong_tool"}
    assert ingested["toy:put_then_incr"].fail_prev_tool == "put" and ingested["toy:count_twice"].reward == 0.0


def test_ace_export_writes_its_tasks_and_its_gold_transcripts(toy, tmp_path, capsys):
    """`ace export --tasks toy`: its own task file (its entry's export_writer) and openai-sft rows of its gold
    transcripts (its export_rows); trl, which it does not give, is refused at load."""
    assert main(["export", "--tasks", "toy:counter", "--format", "toy", "--out", str(tmp_path / "own"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files"] == [toyenv.TASKS_FILE]
    rows = [json.loads(line) for line in (tmp_path / "own" / toyenv.TASKS_FILE).read_text().splitlines()]
    assert rows == [{"id": "toy:count_twice", "group": "counter", "prompt": "Count n up twice.",
                     "gold": [["incr", {"key": "n"}], ["incr", {"key": "n"}]], "expected": {"n": 2}},
                    {"id": "toy:put_then_incr", "group": "counter", "prompt": "Set n to 5, add one, and read n.",
                     "gold": [["put", {"key": "n", "value": 5}], ["incr", {"key": "n"}], ["get", {"key": "n"}]],
                     "expected": {"n": 6}}]
    assert main(["export", "--tasks", "toy", "--format", "openai-sft", "--out", str(tmp_path / "sft"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["written"], report["skipped"]) == (4, 0)
    lines = [json.loads(line) for line in (tmp_path / "sft" / "train.jsonl").read_text().splitlines()]
    ids = [json.loads(line)["task_id"] for line in (tmp_path / "sft" / "task_ids.jsonl").read_text().splitlines()]
    assert ids == [t.id for t in toyenv.TASKS] and all(set(row) == {"messages", "tools"} for row in lines)
    last = lines[3]["messages"]  # put(n, 5), incr(n), get(n): each call, its real output, then the closing text
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant",
                                         "tool", "assistant"]
    assert last[1]["content"] == "Set n to 5, add one, and read n."
    assert [m["content"] for m in last if m["role"] == "tool"] == [
        '{"key": "n", "value": 5}', '{"key": "n", "value": 6}', '{"key": "n", "value": 6}']
    assert last[4]["tool_calls"][0]["function"] == {"name": "incr", "arguments": '{"key": "n"}'}
    assert [t["function"]["name"] for t in lines[0]["tools"]] == ["put", "get", "incr"]


def test_ace_export_trl_writes_its_prompts(toy, tmp_path, capsys):
    """`ace export --format trl`: its entry's trl rows (the prompt a policy starts from, its tools, the task) and
    what dataset_info.json says of them, through the same writer as BFCL's rows."""
    out = tmp_path / "trl"
    assert main(["export", "--tasks", "toy:counter", "--format", "trl", "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["written"], report["skipped"], report["files"]) == (2, 0, ["dataset_info.json", "train.jsonl"])
    rows = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in rows] == ["toy:count_twice", "toy:put_then_incr"]
    assert all(set(r) == {"prompt", "tools", "task", "task_id"} for r in rows)
    assert [m["role"] for m in rows[1]["prompt"]] == ["system", "user"]
    assert rows[1]["prompt"][1]["content"] == "Set n to 5, add one, and read n."
    assert [t["function"]["name"] for t in rows[1]["tools"]] == ["put", "get", "incr"]
    assert json.loads(rows[1]["task"]) == {"id": "toy:put_then_incr", "group": "counter",
                                           "prompt": "Set n to 5, add one, and read n.",
                                           "gold": [["put", {"key": "n", "value": 5}], ["incr", {"key": "n"}],
                                                    ["get", {"key": "n"}]], "expected": {"n": 6}}
    info = json.loads((out / "dataset_info.json").read_text())
    assert (info["format"], info["file"], info["rows"]) == ("trl", "train.jsonl", 2)
    assert set(info["columns"]) == set(rows[0]) and info["system_prompt"] == rows[0]["prompt"][0]["content"]


def test_an_entry_without_rows_of_a_format_has_its_tasks_refused(toy, monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(toyenv.ENVIRONMENTS, "toy", dataclasses.replace(toy, export_rows={}))
    assert main(["export", "--tasks", "toy", "--format", "trl", "--out", str(tmp_path / "trl")]) == 1
    assert "not supported by" in capsys.readouterr().err


# --------------------------------------------------------------------------- free-running `ace eval`


@pytest.fixture
def graph(monkeypatch):
    """The graph replaced by a recorder of what `ace eval` would ingest: the rollout file is read, verified by
    the toy's verifier and tagged as for the graph (ace_graph.ingest), and the records are kept here."""
    stored: dict[str, object] = {}

    def ingest_records(store, items, tasks, experiment, policy, checkpoint, *rest):
        stored.update({rec.rollout_id: rec for rec, _ in items})
        return SimpleNamespace(scope=f"{experiment}/{policy}/{checkpoint}", read=len(stored),
                               to_dict=lambda: {"rollouts": len(stored)})

    monkeypatch.setattr(rolloutcmd, "neo4j_settings", lambda: SimpleNamespace(database="neo4j"))
    monkeypatch.setattr(rolloutcmd, "get_driver", lambda settings: SimpleNamespace(close=lambda: None))
    monkeypatch.setattr(rolloutcmd, "refuse_changes_to_stored_tasks", lambda store, tasks, spec: None)
    monkeypatch.setattr(graph_ingest, "check_rollout_ids", lambda *a, **k: {})
    monkeypatch.setattr(graph_ingest, "ingest_records", ingest_records)
    monkeypatch.setattr(evaluation, "_tables", lambda store, scope, *a: {
        "scope": scope, "skills": [], "tools": [], "weak_compositions": []})
    return stored


def test_ace_eval_rolls_a_sim_policy_out_on_its_tasks(toy, graph, tmp_path, capsys):
    """`ace eval --tasks toy` without --gold-prefix: the rollout engine plays each task through its entry's
    task_turns (its prompt, its tools, a store per rollout, the calls in the engine's watched worker), the rows
    are written, verified by its verifier and ingested."""
    out = tmp_path / "toy.jsonl"
    weakness = toyenv.weakness_file(tmp_path)  # incr always slips to the wrong tool
    assert main(["eval", "--policy", f"sim:{weakness}", "--tasks", "toy", "-G", "2", "-e", "E", "-c", "0",
                 "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["scope"] == "E/sim-toy_weakness/0" and result["rollout"]["rollouts"] == 8
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["rollout_id"] for r in rows] == [f"{t.id}#{g}" for t in toyenv.TASKS for g in range(2)]
    last = rows[-1]  # put(n, 5), then incr slips to get(key='?'), then get(n)
    assert last["turns"] == [["put(key='n', value=5)", "get(key='?')", "get(key='n')"]]
    assert [m["role"] for m in last["messages"]] == ["system", "user", "assistant", "tool", "assistant", "tool",
                                                     "assistant", "tool", "assistant"]
    assert last["messages"][1]["content"] == "Set n to 5, add one, and read n."
    assert [m["content"] for m in last["messages"] if m["role"] == "tool"] == [
        '{"key": "n", "value": 5}', "Error: no key '?'", '{"key": "n", "value": 5}']
    assert last["meta"]["slips"] == [{"turn": 0, "step": 1, "tool": "incr", "kind": "wrong_tool", "cause": "tool"}]
    verdicts = {rid: (r.reward, r.attribution, r.fail_tool, r.fail_prev_tool) for rid, r in graph.items()}
    assert verdicts == {
        **{f"toy:{t}#{g}": (1.0, None, None, None) for t in ("put_get", "two_keys") for g in range(2)},
        **{f"toy:count_twice#{g}": (0.0, "wrong_tool", "incr", None) for g in range(2)},
        **{f"toy:put_then_incr#{g}": (0.0, "wrong_tool", "incr", "put") for g in range(2)}}


def test_ace_eval_rolls_a_tiny_model_out_on_its_tasks(toy, graph, tmp_path, capsys):
    """A real (tiny, random, built offline) hf: model through the same path: its prompt shows the toy's tools,
    its rollouts are written whatever it says, and each gets a verdict."""
    from train.tiny import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    out = tmp_path / "tiny.jsonl"
    assert main(["eval", "--policy", f"hf:{model}", "--tasks", "toy:store", "--max-tokens", "16", "--step-cap", "2",
                 "-e", "E", "-c", "0", "--name", "tiny", "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["task_id"] for r in rows] == ["toy:put_get", "toy:two_keys"] and result["rollout"]["rollouts"] == 2
    assert all(r["meta"]["prompt_tokens"] > 0 and r["messages"][2]["role"] == "assistant" for r in rows)
    assert set(graph) == {"toy:put_get#0", "toy:two_keys#0"}
    assert all(r.reward in (0.0, 1.0) and (r.reward == 1.0 or r.attribution) for r in graph.values())


def test_ace_eval_refuses_an_environment_the_engine_cannot_play(toy, graph, monkeypatch, tmp_path, capsys):
    """Without task_turns (and no dialogues) its tasks are refused free-running, at load, in one line."""
    monkeypatch.setitem(toyenv.ENVIRONMENTS, "toy", dataclasses.replace(toy, task_turns=None))
    assert main(["eval", "--policy", f"sim:{toyenv.weakness_file(tmp_path)}", "--tasks", "toy", "-e", "E", "-c",
                 "0", "--out", str(tmp_path / "r.jsonl")]) == 1
    assert "not supported by" in capsys.readouterr().err and not graph


def test_ace_rollout_writes_its_tasks_rollouts_and_ace_verify_judges_them(toy, tmp_path, capsys):
    """`ace rollout --tasks toy` (no graph): the same engine as `ace eval` plays its tasks into a file that
    `ace verify` judges with its verifier (the planted incr slip fails the two tasks that call incr)."""
    out = tmp_path / "toy.jsonl"
    weakness = toyenv.weakness_file(tmp_path)
    assert main(["rollout", "--policy", f"sim:{weakness}", "--tasks", "toy", "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rollouts"] == len(toyenv.TASKS)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["task_id"] for r in rows] == [t.id for t in toyenv.TASKS]
    assert main(["verify", str(out), "--tasks", "toy", "--json"]) == 0
    verdicts = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    failed = {v["task_id"] for v in verdicts if v.get("reward") == 0.0}
    assert failed == {"toy:count_twice", "toy:put_then_incr"}, verdicts
