"""tests/runtime/test_end_to_end.py, unchanged, on ``spark`` TaskManagers (see backend_matrix.py)."""

from __future__ import annotations

import pytest
from backend_matrix import END_TO_END, ITEM_TIMEOUT_S, run_on  # tests/runtime/ is on sys.path


@pytest.mark.spark
@pytest.mark.timeout(ITEM_TIMEOUT_S)
def test_end_to_end_tests_pass_unchanged_on_spark_taskmanagers() -> None:
    pytest.importorskip("pyspark")
    selected, passed, started = run_on("spark", END_TO_END)
    assert passed == selected >= 14
    assert set(started) == {"spark"} and started["spark"] >= selected
