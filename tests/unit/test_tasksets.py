"""One task vocabulary: every command loads ``--tasks`` through ``ace_env.tasksets.load_task_set``,
which takes comma-separated BFCL categories."""

from __future__ import annotations

import pytest

from ace_env.errors import TaskLoadError
from ace_env.tasksets import load_task_set


def test_comma_separated_categories_are_one_task_set():
    both = load_task_set("bfcl:base,miss_func")
    assert len(both) == 400
    assert set(both) == set(load_task_set("bfcl:base")) | set(load_task_set("bfcl:miss_func"))
    assert load_task_set("bfcl:base, base") == load_task_set("bfcl:base")  # repeated: once
    assert len(load_task_set("bfcl")) == len(load_task_set("bfcl:all")) == 800


@pytest.mark.parametrize("spec", ["bfcl:", "bfcl:base,", "bfcl:,base", "bfcl:nope", "bfcl:base,nope"])
def test_bad_category_lists_are_refused_in_one_line(spec):
    with pytest.raises(TaskLoadError) as e:
        load_task_set(spec)
    assert "\n" not in str(e.value)
