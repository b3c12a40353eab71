"""The skill taxonomy: its content, its coverage of BFCL, and its validation."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from ace_env import bfcl
from ace_env.tau2.tasks import load_tasks as load_tau2_tasks
from ace_graph.errors import ConfigError
from ace_graph.taxonomy import DEFAULT_PATH, FAMILIES, Skill, load_taxonomy, tool_skills

REQUIRED = {
    "query_lookup",
    "param_from_user",
    "param_from_output",
    "result_extraction",
    "search",
    "arithmetic",
    "unit_conversion",
    "result_checking",
    "consistency_check",
    "state_precondition",
    "navigation",
    "authentication",
    "create_state",
    "modify_state",
    "delete_state",
    "transaction",
    "device_control",
    "messaging",
    "abstain",
}


def test_taxonomy_size_and_families():
    skills = load_taxonomy()
    assert 20 <= len(skills) <= 30
    assert all(isinstance(s, Skill) and s.id == k for k, s in skills.items())
    assert set(Counter(s.family for s in skills.values())) == set(FAMILIES)
    assert all(s.description.strip() and "\n" not in s.description for s in skills.values())
    assert REQUIRED <= set(skills)


def test_every_bfcl_function_maps_to_known_skills():
    skills = load_taxonomy()
    tools = tool_skills()
    assert set(bfcl.functions()) <= set(tools)
    assert len(bfcl.functions()) == 128
    for name, ids in tools.items():
        assert 1 <= len(ids) <= 3, name
        assert set(ids) <= set(skills), name
        # base skills say what a tool does; how arguments were obtained is the tagger's job
        assert not {"abstain", "param_from_user", "param_from_output", "state_precondition"} & set(ids), name


def test_some_mappings_make_sense():
    tools = tool_skills()
    assert "transaction" in tools["place_order"]
    assert "navigation" in tools["cd"]
    assert "authentication" in tools["authenticate_twitter"]
    assert "messaging" in tools["post_tweet"]
    assert "device_control" in tools["startEngine"]
    assert "consistency_check" in tools["diff"]
    assert "arithmetic" in tools["add"]
    assert "unit_conversion" in tools["gallon_to_liter"]


def test_results_are_copies():
    load_taxonomy().clear()
    tool_skills().clear()
    assert load_taxonomy() and tool_skills()


def _variant(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "skills.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _refused(tmp_path: Path, original: str, text: str, match: str, load=load_taxonomy) -> None:
    """``text``, an edit of the packaged file (it must differ from ``original``), is refused by ``load``
    (:func:`load_taxonomy` or :func:`tool_skills`) with a ConfigError matching ``match``."""
    assert text != original
    with pytest.raises(ConfigError, match=match):
        load(_variant(tmp_path, text))


@pytest.fixture
def original() -> str:
    return DEFAULT_PATH.read_text(encoding="utf-8")


def test_a_copy_of_the_packaged_file_loads(tmp_path, original):
    path = _variant(tmp_path, original)
    assert load_taxonomy(path) == load_taxonomy()
    assert tool_skills(path) == tool_skills()


def test_duplicate_skill_id_is_rejected(tmp_path, original):
    dup = '\n[[skill]]\nid = "search"\nfamily = "computation"\ndescription = "again"\n'
    text = original.replace("\n[tools]\n", dup + "\n[tools]\n", 1)
    _refused(tmp_path, original, text, r"duplicate skill id 'search'")


def test_unknown_family_is_rejected(tmp_path, original):
    text = original.replace('id = "search"\nfamily = "information_acquisition"', 'id = "search"\nfamily = "magic"', 1)
    _refused(tmp_path, original, text, r"'search'.*unknown family 'magic'")


def test_empty_description_is_rejected(tmp_path, original):
    text = re.sub(r'(id = "navigation"\nfamily = "state_handling"\ndescription = )".*"', r'\1"  "', original)
    _refused(tmp_path, original, text, r"'navigation'.*empty description")


def test_tool_mapped_to_unknown_skill_is_rejected(tmp_path, original):
    text = original.replace('place_order = ["transaction"]', 'place_order = ["trading_wizardry"]', 1)
    _refused(tmp_path, original, text, r"'place_order'.*unknown skill 'trading_wizardry'", tool_skills)


def test_tool_with_no_skill_is_rejected(tmp_path, original):
    text = original.replace('cd = ["navigation"]', "cd = []", 1)
    _refused(tmp_path, original, text, r"'cd'", tool_skills)


def test_missing_derived_skill_is_rejected(tmp_path, original):
    text = original.replace('id = "abstain"', 'id = "abstention"', 1)
    _refused(tmp_path, original, text, r"abstain")


def test_invalid_toml_and_missing_file(tmp_path, original):
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_taxonomy(_variant(tmp_path, original + '\ncd = ["navigation"]\n'))
    with pytest.raises(ConfigError, match="Cannot read"):
        load_taxonomy(tmp_path / "nope.toml")


def test_every_tau2_agent_tool_is_mapped():
    tools = tool_skills()
    names = {n for d in ("airline", "retail", "telecom") for n in load_tau2_tasks(d)[0].tool_names}
    assert len(names) == 38 and names <= set(tools)
    assert set(tools) == set(bfcl.functions()) | names  # nothing else: the telecom user's own tools are not agent tools
    assert tools["send_payment_request"] == ("transaction", "messaging")
    assert tools["update_reservation_flights"] == ("modify_state", "transaction")
    assert tools["get_order_details"] == ("query_lookup", "result_checking")  # BFCL's mapping, unchanged
