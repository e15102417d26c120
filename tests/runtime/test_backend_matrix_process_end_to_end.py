"""tests/runtime/test_end_to_end.py, unchanged, on ``process`` TaskManagers (see backend_matrix.py)."""

from __future__ import annotations

import pytest
from backend_matrix import END_TO_END, ITEM_TIMEOUT_S, run_on  # tests/runtime/ is on sys.path


@pytest.mark.timeout(ITEM_TIMEOUT_S)
def test_end_to_end_tests_pass_unchanged_on_process_taskmanagers() -> None:
    selected, passed, started = run_on("process", END_TO_END)
    assert passed == selected >= 14  # every test of the file, none left out
    assert set(started) == {"process"} and started["process"] >= selected  # each test starts a cluster
