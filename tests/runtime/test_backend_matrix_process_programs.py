"""The PyFlink programs whose records cross TaskManagers keyed, unchanged, on ``process`` TaskManagers
(see backend_matrix.py)."""

from __future__ import annotations

import pytest
from backend_matrix import ITEM_TIMEOUT_S, PROCESS_PROGRAMS, PROGRAMS, run_on  # tests/runtime/ is on sys.path


@pytest.mark.timeout(ITEM_TIMEOUT_S)
def test_pyflink_programs_pass_unchanged_on_process_taskmanagers() -> None:
    selected, passed, started = run_on("process", PROGRAMS, "-k", " or ".join(PROCESS_PROGRAMS))
    assert passed == selected >= len(PROCESS_PROGRAMS)
    assert set(started) <= {"process"}  # the programs' clusters start in their own scripts' processes
