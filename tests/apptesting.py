"""The dashboard's pages run in-process through Streamlit's AppTest (no browser), for the app's integration
tests: ``ok(page("Overview.py", scope=...))``."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = Path(__file__).resolve().parents[1] / "app"


def page(name: str, **params: str) -> AppTest:
    """The page ``name`` (its path under app/) opened with the query parameters ``params``, run once."""
    at = AppTest.from_file(str(APP / name), default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def ok(at: AppTest) -> AppTest:
    """``at``, once its run is seen to have raised nothing."""
    assert not at.exception, [e.value for e in at.exception]
    return at
