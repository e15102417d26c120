"""bench/bench_cockpit.py keeps running: its --quick smoke run exits 0 and prints both figures and the ratio.

No figure is asserted (speed figures come from the bench itself, never from tests); the
bench checks every run's result count itself, so a dashboard that lost or held back
records would make it exit non-zero.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "bench_cockpit.py")


def test_the_quick_run_exits_0_and_prints_both_throughputs() -> None:
    done = subprocess.run([sys.executable, SCRIPT, "--quick"], capture_output=True, text=True, timeout=180,
                          cwd=os.path.dirname(SCRIPT))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert re.search(r"without a dashboard: +[\d,]+ records/s", out)
    refreshes = re.search(r"with the dashboard: +[\d,]+ records/s \([\d.]+ s; (\d+) view refreshes per run\)", out)
    assert refreshes and int(refreshes.group(1)) >= 2  # both views drew at least their first picture
    assert "throughput kept with the dashboard open:" in out
