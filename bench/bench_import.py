"""How long ``import streamkernel`` (and its API packages) takes, against a bare interpreter.

Run: ``.venv/bin/python bench/bench_import.py``. Prints the median of several fresh
interpreter starts for each import, the bare ``python -c pass`` start measured in the same
run, and the difference (the import's own cost), which should stay well under 0.5 s.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

RUNS = 7
CASES = {
    "bare interpreter (baseline)": "pass",
    "import streamkernel": "import streamkernel",
    "import streamkernel.datastream, .common": "import streamkernel.datastream, streamkernel.common",
    "+ build a graph": ("from streamkernel.datastream import StreamExecutionEnvironment as S;"
                        "e=S.get_execution_environment();e.from_collection([1]).map(str).print();e.get_job_graph()"),
}


def _median_seconds(code: str) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Print one line per case: median wall time and the cost above the bare interpreter."""
    base = None
    for label, code in CASES.items():
        seconds = _median_seconds(code)
        base = seconds if base is None else base
        print(f"{label:<45} {seconds * 1000:7.1f} ms   import cost {max(0.0, seconds - base) * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
