"""The runtime's end-to-end keyed-state, timer and window tests, unchanged, on ``process`` and ``spark``.

Each backend gets its own pytest run in a subprocess with ``STREAMKERNEL_BACKEND`` set, so
every cluster those tests start (their own MiniClusters and the transient ones of
``env.execute()``) has its TaskManagers in child processes or in Spark tasks, and records
between TaskManagers go over TCP:

* ``tests/runtime/test_end_to_end.py``: keyed results at parallelism 1, 2 and 4, ValueState
  per key, event-time windows, late data to a side output, a failing user function naming
  operator, subtask and record, cancel, backpressure, several jobs, batch mode;
* ``tests/compat/test_pyflink_programs.py``: the PyFlink programs (keyed state with TTL,
  timers, tumbling, sliding, session and count windows, triggers, side outputs, file
  sinks), each run as a script. On ``spark`` three of them run (each script starts its own
  JVM: about ten seconds apiece): ValueState, event-time timers, tumbling windows.

The run must pass with nothing skipped, and ``backend_matrix_plugin`` must report that the
clusters started were on the backend asked for (and none on another).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
END_TO_END = "tests/runtime/test_end_to_end.py"
PROGRAMS = "tests/compat/test_pyflink_programs.py"
SPARK_PROGRAMS = "running_balance_state or delayed_event_timers or (window_program_prints and tumbling)"


def _run_on(backend: str, *args: str) -> str:
    env = dict(os.environ, STREAMKERNEL_BACKEND=backend,
               PYTHONPATH=os.pathsep.join([str(REPO / "tests" / "runtime"), str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "pytest", *args, "-p", "backend_matrix_plugin", "-p", "no:cacheprovider",
                           "-q", "-rs"], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    return out


def _summary(out: str) -> tuple[int, dict[str, int]]:
    passed = re.search(r"(\d+) passed", out)
    started = re.search(r"clusters started per backend: (\{.*\})", out)
    assert passed and started, out[-3000:]
    assert not re.search(r"\d+ (skipped|xfailed|xpassed)", out), out[-3000:]
    return int(passed.group(1)), ast.literal_eval(started.group(1))


def _collected(*args: str) -> int:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    return sum(1 for line in done.stdout.splitlines() if "::" in line)


def test_keyed_state_and_window_tests_pass_unchanged_on_process_taskmanagers() -> None:
    out = _run_on("process", END_TO_END, PROGRAMS)
    passed, started = _summary(out)
    assert passed == _collected(END_TO_END, PROGRAMS)  # every test of both files, none left out
    assert set(started) == {"process"} and started["process"] >= _collected(END_TO_END)


@pytest.mark.spark
def test_keyed_state_and_window_tests_pass_unchanged_on_spark_taskmanagers() -> None:
    pytest.importorskip("pyspark")
    out = _run_on("spark", END_TO_END, PROGRAMS, "-k", f"not test_pyflink_programs or {SPARK_PROGRAMS}")
    passed, started = _summary(out)
    assert passed == _collected(END_TO_END) + 3
    assert set(started) == {"spark"} and started["spark"] >= _collected(END_TO_END)
