"""bench/bench_scaleout.py keeps running: its --quick smoke run exits 0 and prints every figure.

No figure is asserted (speed figures come from the bench itself, never from tests). The
bench checks each run's result itself (W1's sum against the plain loop's, W2's count), so
a backend that lost or duplicated records makes the run exit non-zero and this test fail.
"""

from __future__ import annotations

import os
import subprocess
import sys


SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "bench_scaleout.py")


def _quick(backends: str) -> str:
    done = subprocess.run([sys.executable, SCRIPT, "--quick", "--backends", backends], capture_output=True,
                          text=True, timeout=240, cwd=os.path.dirname(SCRIPT))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _rows(out: str) -> list[tuple[str, str]]:
    table = out[out.index("\nbackend "):out.index("\nstart-up and stop")].strip().splitlines()[1:]
    return [(line.split()[0], line.split()[5]) for line in table]


def test_the_quick_run_on_process_taskmanagers_prints_both_workloads_and_start_up() -> None:
    out = _quick("process")
    assert out.startswith("command: ")
    assert _rows(out) == [("local", "W1"), ("local", "W2"), ("process", "W1"), ("process", "W2")]
    assert "process  cluster started (TaskManagers registered)" in out
    assert "process  start -> first record of a first job" in out
    assert "W1 speedup at parallelism 2 over parallelism 1 on local: best" in out


def test_an_unknown_backend_is_refused_by_name() -> None:
    done = subprocess.run([sys.executable, SCRIPT, "--quick", "--backends", "yarn"], capture_output=True,
                          text=True, timeout=60, cwd=os.path.dirname(SCRIPT))
    assert done.returncode == 2 and "unknown backend(s) ['yarn']" in done.stderr
