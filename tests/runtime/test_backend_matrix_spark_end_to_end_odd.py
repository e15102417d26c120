"""tests/runtime/test_end_to_end.py, unchanged, on ``spark`` TaskManagers: its odd-numbered tests
(the even ones are in test_backend_matrix_spark_end_to_end.py)."""

from __future__ import annotations

import pytest
from backend_matrix import END_TO_END, ITEM_TIMEOUT_S, run_on  # tests/runtime/ is on sys.path


@pytest.mark.spark
@pytest.mark.timeout(ITEM_TIMEOUT_S)
def test_the_other_end_to_end_tests_pass_unchanged_on_spark_taskmanagers() -> None:
    pytest.importorskip("pyspark")
    selected, passed, started = run_on("spark", END_TO_END, shard="1/2")
    assert passed == selected >= 7
    assert set(started) == {"spark"} and started["spark"] >= selected // 2  # their clusters ran on spark
