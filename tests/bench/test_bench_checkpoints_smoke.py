"""bench/bench_checkpoints.py keeps running: its --quick smoke run exits 0 and prints every part.

No figure is asserted (speed figures come from the bench itself, never from tests); this
only keeps the script from rotting as the runtime changes under it. The run takes a few
seconds: two W2 runs, two small keyed jobs, two killed TaskManagers.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "bench_checkpoints.py")


def test_the_quick_run_exits_0_and_prints_the_three_parts() -> None:
    pytest.importorskip("rocksdict")  # part (b) runs on the rocksdb backend too
    done = subprocess.run([sys.executable, SCRIPT, "--quick"], capture_output=True, text=True, timeout=180,
                          cwd=os.path.dirname(SCRIPT))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert out.startswith("command: ") and "cores" in out
    a, b, c = out.index("\n(a) W2 throughput"), out.index("\n(b) checkpoint duration"), out.index("\n(c) recovery")
    assert a < b < c
    assert "throughput kept:" in out[a:b] and "direct cost (thread CPU time" in out[a:b]
    rows = [line.split()[0] for line in out[b:c].strip().splitlines()[2:]]
    assert rows == ["hashmap", "rocksdb"]
    recovery = out[c:]
    assert recovery.count("cause: TaskManagerLostError") == 2  # both strategies saw the kill
    assert "restored checkpoint None" not in recovery  # each restart restored a checkpoint
