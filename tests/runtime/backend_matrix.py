"""The backend matrix: the runtime's end-to-end keyed-state, timer and window tests, unchanged, on
``process`` and ``spark`` (the helpers of ``test_backend_matrix_*.py``; not a test module).

Each (backend, test file) pair is one pytest item that runs that file in its own pytest
subprocess with ``STREAMKERNEL_BACKEND`` set, so every cluster those tests start (their
own MiniClusters and the transient ones of ``env.execute()``) has its TaskManagers in
child processes or in Spark tasks, and records between TaskManagers go over TCP:

* ``tests/runtime/test_end_to_end.py``: keyed results at parallelism 1, 2 and 4, ValueState
  per key, event-time windows, late data to a side output, a failing user function naming
  operator, subtask and record, cancel, backpressure, several jobs, batch mode;
* ``tests/compat/test_pyflink_programs.py``: the PyFlink programs whose records cross
  TaskManagers keyed (:data:`PROCESS_PROGRAMS`: keyed state with TTL, timers, tumbling,
  sliding, session and count windows, triggers, side outputs, file sinks), each run as a
  script; the stateless ones run on ``local`` only (the whole file took a minute of the
  suite's 10 minutes on ``process``). On ``spark`` one of them runs (each script starts its own
  JVM: about ten seconds on an idle machine, half a minute or more on a loaded one): the
  event-time timers program, which keeps keyed state, registers timers and follows
  watermarks across TaskManagers in Spark tasks. The end-to-end file above already covers
  state, windows and timers on spark in one shared SparkSession; two more program scripts
  (ValueState, tumbling windows) cost a minute of the suite's 10-minute budget and found
  nothing the others did not.

Every selected test of a run must pass, with nothing skipped (``backend_matrix_plugin``
prints how many were selected), and the plugin must report that the clusters started in
the run were on the backend asked for (and none on another).

Each pair is a test file of its own (``test_backend_matrix_{process,spark}_{end_to_end,programs}.py``):
under ``--dist loadfile`` a file is one unit of work, and as one file the four were a unit of
over three minutes (seven on a loaded machine) that only one worker could run; apart, the two
workers share them (the root conftest.py hands them out first, longest first).

One item per file (per program on spark) keeps each item's time a fraction of the whole:
on an idle 2-core machine the longest (the programs on ``process``) takes about a minute,
on one loaded by other test runs (load average 8) about two and a half minutes; the per-item
timeout (:data:`ITEM_TIMEOUT_S`) leaves room for a machine several times slower, and the
subprocess is stopped a little earlier, so a run that is too slow fails with its output.
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
#: the programs run on spark (each starts its own JVM), one pytest item each
SPARK_PROGRAMS = {"event-time timers": "test_delayed_event_timers"}
#: the programs run on process TaskManagers: those whose records cross TaskManagers keyed, with
#: state, timers, windows, side outputs or file sinks (the stateless ones, rows and JSON
#: transformations, exercise nothing another backend changes; they run on ``local`` in tests/compat)
PROCESS_PROGRAMS = ("test_running_balance_state", "test_group_average_state", "test_list_map_state_ttl",
                    "test_delayed_event_timers", "test_idle_key_timeout", "test_window_program_prints",
                    "test_branching_and_side_outputs", "test_batch_word_count_file_source_and_file_sink",
                    "test_sequence_ordinals_file_sink", "test_rolling_aggregations")
ITEM_TIMEOUT_S = 600
RUN_TIMEOUT_S = ITEM_TIMEOUT_S - 60


def run_on(backend: str, *args: str, shard: str = "") -> tuple[int, int, dict[str, int]]:
    """Run pytest on ``args`` with ``backend``: (tests selected, tests passed, clusters started per backend).
    ``shard`` (``"i/n"``): only every n-th collected test from the i-th (backend_matrix_plugin.py)."""
    env = dict(os.environ, STREAMKERNEL_BACKEND=backend, STREAMKERNEL_MATRIX_SHARD=shard,
               PYTHONPATH=os.pathsep.join([str(REPO / "tests" / "runtime"), str(REPO), os.environ.get("PYTHONPATH", "")]))
    # no nbval: importing it (nbformat, jsonschema's IRI grammar) costs seconds of CPU and no notebook runs here
    command = [sys.executable, "-m", "pytest", *args, "-p", "backend_matrix_plugin", "-p", "no:cacheprovider",
               "-p", "no:nbval", "-q", "-rs"]
    try:
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as slow:
        out = (slow.stdout or "") + (slow.stderr or "")
        out = out if isinstance(out, str) else out.decode(errors="replace")
        pytest.fail(f"pytest {' '.join(args)} on {backend} did not end within {RUN_TIMEOUT_S} s:\n{out[-6000:]}")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    selected = re.search(r"^tests selected: (\d+)$", out, re.MULTILINE)
    passed = re.search(r"(\d+) passed", out)
    started = re.search(r"clusters started per backend: (\{.*\})", out)
    assert selected and passed and started, out[-3000:]
    assert not re.search(r"\d+ (skipped|xfailed|xpassed)", out), out[-3000:]
    return int(selected.group(1)), int(passed.group(1)), ast.literal_eval(started.group(1))
