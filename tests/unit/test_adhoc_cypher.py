"""`ace cypher`'s checks before a query reaches Neo4j, and `ace synth --target`'s name parsing (no services)."""

from __future__ import annotations

import io
import sys

import pytest

from ace.cli.cyphercmd import MAX_QUERY_BYTES, parse_params, read_query, split_params_lines
from ace_graph.errors import ConfigError
from ace_graph.frontier import parse_target
from ace_graph.queries import adhoc_checked, coerce_param


@pytest.mark.parametrize("text, params", [
    ("MATCH (s:Scope {key: $scope}) RETURN s", {"scope": "a/b/c"}),
    ("CALL db.labels()", {}),
    ("CALL db.schema.visualization()", {}),
    ("MATCH (n) CALL (n) { RETURN n.id AS id } RETURN id", {}),
    ("MATCH (n) CALL { RETURN 1 AS one } RETURN one", {}),
    ("RETURN 'CALL dbms.listConfig(); LOAD CSV' AS text // CALL apoc.x()\n", {}),
    ("MATCH (t:Tool) RETURN t.name AS use;", {}),
    ("MATCH (n:`it's`) RETURN n.`a\"b` AS x, 'it`s' AS y", {}),
    ("SHOW INDEXES YIELD name RETURN name", {}),
    ("show range constraints", {}),
    ("MATCH (n:Show) RETURN n.terminate AS t", {}),  # quotes inside names, a backtick inside a string
])
def test_a_read_passes_with_its_parameters(text, params):
    assert adhoc_checked(text, params)


@pytest.mark.parametrize("text, params, says", [
    ("", {}, "empty"),
    ("// only a comment", {}, "empty"),
    ("CALL dbms.listConfig()", {}, "procedure dbms.listConfig refused"),
    ("CALL apoc.periodic.iterate('a', 'b', {})", {}, "procedure apoc.periodic.iterate refused"),
    ("call `db`.`createLabel`('X')", {}, "procedure db.createLabel refused"),
    ("MATCH (n) CALL db.index.fulltext.queryNodes('i', 'x') YIELD node RETURN node", {}, "refused"),
    ("LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l", {}, "LOAD CSV refused"),
    ("USE system SHOW USERS", {}, "USE refused"),
    ("MATCH (n) RETURN n; MATCH (n) DETACH DELETE n", {}, "one statement at a time"),
    ("MATCH (n) RETURN n;\nMATCH (n) DETACH DELETE n", {}, "one statement at a time"),
    ("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS", {}, "IN TRANSACTIONS refused"),
    ("RETURN $x, $y", {"x": 1}, "pass -P y=VALUE"),
    ("RETURN 1", {"x": 1}, "not used: x"),
    # a quote inside a backtick-quoted name starts no string: it hid the rest of the query from the checks (h9)
    ("MATCH (n:`'`) LOAD CSV FROM 'http://127.0.0.1:1/x' AS l RETURN l", {}, "LOAD CSV refused"),
    ("MATCH (n:`'`) CALL dbms.listConfig() YIELD name WHERE name <> '' RETURN name", {}, "procedure dbms.listConfig refused"),
    ('MATCH (n:`"`) CALL db.clearQueryCaches() YIELD value WHERE value <> "" RETURN value', {}, "procedure db.clearQueryCaches"),
    # administration commands: they stop others' transactions or list the server's users and settings (h9)
    ("TERMINATE TRANSACTIONS 'neo4j-transaction-1'", {}, "administration commands refused"),
    ("SHOW TRANSACTIONS YIELD transactionId AS t TERMINATE TRANSACTIONS t", {}, "administration commands refused"),
    ("SHOW USERS", {}, "administration commands refused"),
    ("show settings yield name, value where name contains 'directories' return name, value", {},
     "administration commands refused"),
    ("SHOW PROCEDURES", {}, "administration commands refused"),
])
def test_what_never_reaches_the_server(text, params, says):
    with pytest.raises(ConfigError, match=says.replace("$", r"\$")):
        adhoc_checked(text, params)


def test_params_lines_give_defaults_and_p_values_are_json_or_text():
    text, params = split_params_lines(':params {scope: "demo/sim/round-0", limit: 5}\nMATCH (n) RETURN n LIMIT $limit')
    assert text.strip() == "MATCH (n) RETURN n LIMIT $limit"
    assert params == {"scope": "demo/sim/round-0", "limit": 5}
    assert parse_params(["limit=3", "scope=a/b/c", "names=[\"x\"]"]) == {"limit": 3, "scope": "a/b/c", "names": ["x"]}
    for bad in ([":params {scope: nope}"], [":param x => 1"]):
        with pytest.raises(ConfigError):
            split_params_lines("\n".join(bad + ["RETURN 1"]))
    with pytest.raises(ConfigError, match="key=value"):
        parse_params(["novalue"])


@pytest.mark.parametrize("text, pair", [
    ("get_flight_cost>book_flight", ("get_flight_cost", "book_flight")),
    (" query_lookup > param_from_output ", ("query_lookup", "param_from_output")),
])
def test_a_target_is_two_names(text, pair):
    assert parse_target(text) == pair


@pytest.mark.parametrize("text", ["book_flight", ">b", "a>", "a>b>c", ""])
def test_a_malformed_target_is_refused(text):
    with pytest.raises(ConfigError, match="FROM>TO"):
        parse_target(text)


def test_a_query_text_has_a_size_cap(tmp_path, monkeypatch):
    """`ace cypher - < /dev/zero` read standard input until memory ran out (a MemoryError traceback); a query
    (argument, -f FILE or -) is at most 1 MiB, and no more than that is read (h9)."""
    big = tmp_path / "q.cypher"
    big.write_bytes(b"RETURN 1" + b" " * MAX_QUERY_BYTES)
    with pytest.raises(ConfigError, match="query file .* holds more than 1024 KiB"):
        read_query(None, big)
    stdin = io.BytesIO(b"\0" * (3 * MAX_QUERY_BYTES))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stdin))
    with pytest.raises(ConfigError, match="standard input holds more than 1024 KiB"):
        read_query("-", None)
    assert stdin.tell() <= 2 * MAX_QUERY_BYTES  # not read to its end
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"RETURN 1\n")))
    assert read_query("-", None) == "RETURN 1\n"


@pytest.mark.parametrize("text, kind, says", [
    ("99999999999999999999", "int", "outside the 64-bit integers"),
    ("-9223372036854775809", "int", "outside the 64-bit integers"),
    ("[" * 5000 + "]" * 5000, "list", "nested too deeply"),
])
def test_a_console_value_the_driver_cannot_send_is_one_error(text, kind, says):
    """The dashboard's query console (a visitor's URL: ?q=weak-compositions&p_limit=99999999999999999999, or
    p_scopes=[[[[...) showed an OverflowError or RecursionError traceback (h9's hostile run)."""
    with pytest.raises(ConfigError, match=says):
        coerce_param(text, kind)
    assert coerce_param("9223372036854775807", "int") == 2**63 - 1


@pytest.mark.parametrize("item, says", [
    ("x=a\udcff", "not UTF-8 text"),  # the byte 0xff in argv, as Python decodes it
    ("x=99999999999999999999", "does not fit a 64-bit integer"),
    ("x=[1, [2, -9223372036854775809]]", "does not fit a 64-bit integer"),
])
def test_a_param_value_the_driver_cannot_send_is_one_error(item, says):
    """`ace cypher 'RETURN $x' -P x=$'a\\xff'` was a UnicodeEncodeError traceback from the driver, and an int past 64
    bits an OverflowError one (h9's hostile run)."""
    with pytest.raises(ConfigError, match=says):
        parse_params([item])
