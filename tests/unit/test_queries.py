"""The .cypher loader: headers, statement splitting, unknown names."""

from __future__ import annotations

import pytest

from ace_graph import queries
from ace_graph.config import CYPHER_DIR
from ace_graph.errors import ConfigError


@pytest.fixture(autouse=True)
def _fresh_cache():
    queries.clear_cache()
    yield
    queries.clear_cache()


def write(tmp_path, name, text):
    (tmp_path / f"{name}.cypher").write_text(text)
    return tmp_path


def test_schema_file_parses_into_idempotent_statements():
    q = queries.load("schema")
    assert q.params == ("default_source",) and q.columns == ()
    assert "schema" in q.description.lower()
    stmts = queries.statements("schema")
    assert len(stmts) == 18
    for s in stmts:
        # CREATE ... IF NOT EXISTS; the old bare-id Task constraint dropped IF EXISTS; one keying migration
        assert (s.startswith("CREATE ") and "IF NOT EXISTS" in s) or (s.startswith("DROP ") and "IF EXISTS" in s) \
            or s.startswith("MATCH (t:Task) WHERE t.key IS NULL")
        assert ";" not in s and "//" not in s
    joined = "\n".join(stmts)
    for label, prop in [("Skill", "id"), ("Tool", "name"), ("Task", "key"), ("Rollout", "id"),
                        ("Scope", "key")]:
        assert f"(n:{label}) REQUIRE n.{prop} IS UNIQUE" in joined
    assert "FOR (n:Rollout) ON (n.scope)" in joined
    assert "FOR ()-[c:COMPOSES]-() ON (c.scope, c.level)" in joined


def test_every_shipped_query_file_loads():
    names = queries.list_queries()
    assert "schema" in names
    assert names == sorted(p.stem for p in CYPHER_DIR.glob("*.cypher"))
    for name in names:
        q = queries.load(name)
        assert q.name == name and q.text and q.description


def test_header_fields_are_parsed(tmp_path):
    d = write(tmp_path, "top_skills", (
        "// Purpose: skills that fail most often\n"
        "//   across all rollouts of a task.\n"
        "// Parameters: $task_id (string), $limit (int)\n"
        "// Columns: skill, failures\n"
        "// Mode: read\n"
        "MATCH (r:Rollout {task_id: $task_id})-[:HAS_STEP]->(s:Step)-[:USES]->(k:Skill)\n"
        "RETURN k.id AS skill, count(*) AS failures\n"
        "ORDER BY failures DESC LIMIT $limit;\n"
    ))
    q = queries.load("top_skills", d)
    assert q.description == "skills that fail most often across all rollouts of a task."
    assert q.params == ("task_id", "limit")
    assert q.columns == ("skill", "failures")
    assert q.text.startswith("MATCH (r:Rollout")
    assert q.text.endswith("LIMIT $limit")  # trailing ';' dropped
    assert "//" not in q.text
    assert queries.load("top_skills", d) is q  # cached


def test_multiline_parameters_and_none(tmp_path):
    d = write(tmp_path, "q", (
        "// Purpose: count\n"
        "// Parameters:\n"
        "//   $a: first\n"
        "//   $b: second\n"
        "// Columns: none\n"
        "// Mode: write\n"
        "MATCH (n) WHERE n.a = $a AND n.b = $b SET n.seen = true\n"
    ))
    q = queries.load("q", d)
    assert q.params == ("a", "b") and q.columns == ()


def test_statements_split_only_on_line_ending_semicolons(tmp_path):
    d = write(tmp_path, "multi", (
        "// Purpose: several statements\n"
        "// Parameters: none\n"
        "// Columns: none\n"
        "// Mode: write\n"
        "CREATE (:A {s: 'x;\ny'});\n"          # ';' inside a string spanning lines
        "// a comment; with a semicolon;\n"
        "CREATE (:B {url: 'http://h/p'}); // trailing comment\n"
        "/* block; comment */\n"
        "RETURN 1; RETURN 2\n"                 # ';' mid-line does not split
        ";\n"
    ))
    stmts = queries.statements("multi", d)
    assert stmts == [
        "CREATE (:A {s: 'x;\ny'})",
        "CREATE (:B {url: 'http://h/p'})",
        "RETURN 1; RETURN 2",
    ]


def test_undeclared_parameter_is_rejected(tmp_path):
    d = write(tmp_path, "bad", "// Purpose: x\n// Parameters: $a\n// Columns: n\n// Mode: read\nMATCH (n {a: $a, b: $b}) RETURN n\n")
    with pytest.raises(ConfigError, match=r"\$b"):
        queries.load("bad", d)


def test_dollar_inside_string_is_not_a_parameter(tmp_path):
    d = write(tmp_path, "ok", "// Purpose: x\n// Parameters: none\n// Columns: p\n// Mode: read\nRETURN '$5 off' AS p\n")
    assert queries.load("ok", d).params == ()


def test_missing_header_or_fields_is_rejected(tmp_path):
    write(tmp_path, "noheader", "MATCH (n) RETURN n\n")
    write(tmp_path, "nocolumns", "// Purpose: x\n// Parameters: none\n// Mode: read\nMATCH (n) RETURN n\n")
    write(tmp_path, "nomode", "// Purpose: x\n// Parameters: none\n// Columns: n\nMATCH (n) RETURN n\n")
    with pytest.raises(ConfigError, match="no header"):
        queries.load("noheader", tmp_path)
    with pytest.raises(ConfigError, match="Columns:"):
        queries.load("nocolumns", tmp_path)
    with pytest.raises(ConfigError, match="Mode:"):  # one rule: never guessed from the name
        queries.load("nomode", tmp_path)


@pytest.mark.parametrize("name", ["nope", "../pyproject", "schema.cypher", ""])
def test_unknown_name_lists_known_queries(name):
    with pytest.raises(ConfigError) as e:
        queries.load(name)
    assert "Known queries:" in str(e.value) and "schema" in str(e.value)
