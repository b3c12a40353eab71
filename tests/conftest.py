"""Fixtures shared by both test tiers.

Unit tests (tests/unit) need no services.  Integration tests
(tests/integration, marked ``integration`` automatically) run against the
Neo4j that ``get_driver()`` points at: the managed server (`ace db start`) or
NEO4J_URI.  When it is unreachable those tests fail; they never skip.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

INTEGRATION_DIR = Path(__file__).resolve().parent / "integration"


def pytest_collection_modifyitems(config, items):
    """Mark every test under tests/integration with ``integration``."""
    for item in items:
        if INTEGRATION_DIR in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def neo4j_database() -> str:
    """Name of the database tests write to (NEO4J_DATABASE, default ``neo4j``)."""
    from ace_graph.config import neo4j_settings

    return neo4j_settings().database


@pytest.fixture(scope="session")
def neo4j_driver():
    """A driver for the configured Neo4j; fails the test when it cannot connect."""
    from ace_graph.db import get_driver
    from ace_graph.errors import AceError

    try:
        driver = get_driver()
    except AceError as e:
        pytest.fail(f"Integration tests need a running Neo4j, and none answered: {e}", pytrace=False)
    yield driver
    driver.close()


@pytest.fixture
def clean_db(neo4j_driver, neo4j_database):
    """The shared driver, with every node and relationship deleted before the test.

    Community Edition has a single user database, so tests share it and wipe it.
    """
    with neo4j_driver.session(database=neo4j_database) as session:
        # In batches, so a database left large by a benchmark is wiped without one huge transaction.
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
    return neo4j_driver


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    """A tiny model's folder (:func:`train.tiny.build_tiny_model`, seed 0), built once per test module: a policy
    as ``hf:<folder>``."""
    from train.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="module")
def tiny_and_tokenizer(tiny_model):
    """The tiny model's folder and its tokenizer."""
    from transformers import AutoTokenizer

    return tiny_model, AutoTokenizer.from_pretrained(str(tiny_model))


@pytest.fixture
def run_dir(request) -> Iterator[Path]:
    """The run folder of the test module's ``EXPERIMENT`` (``ace_home()/runs/EXPERIMENT``), removed before the
    test and after it."""
    import shutil

    from ace_env.workspace import ace_home

    path = ace_home() / "runs" / request.module.EXPERIMENT
    shutil.rmtree(path, ignore_errors=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)
