"""A PyFlink program (event-time timers), unchanged, on ``spark`` TaskManagers (see backend_matrix.py)."""

from __future__ import annotations

import pytest
from backend_matrix import ITEM_TIMEOUT_S, PROGRAMS, SPARK_PROGRAMS, run_on  # tests/runtime/ is on sys.path


@pytest.mark.spark
@pytest.mark.timeout(ITEM_TIMEOUT_S)
@pytest.mark.parametrize("program", sorted(SPARK_PROGRAMS))
def test_pyflink_programs_pass_unchanged_on_spark_taskmanagers(program: str) -> None:
    pytest.importorskip("pyspark")
    selected, passed, started = run_on("spark", PROGRAMS, "-k", SPARK_PROGRAMS[program])
    assert passed == selected == 1
    assert set(started) <= {"spark"}
