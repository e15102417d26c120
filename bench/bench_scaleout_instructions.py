"""What a keyed exchange across processes costs, counted in instructions (issue 15).

Run: ``.venv/bin/python bench/bench_scaleout_instructions.py [--small N] [--large N]``
(needs valgrind; about 5 minutes).

``bench/bench_scaleout.py`` times W2 (key_by + running reduce) at parallelism 2 on two
process TaskManagers against parallelism 1 on one local TaskManager. On a shared virtual
machine those wall-clock figures say more about the other tenants than about the engine:
two processes of plain Python ran only 1.1-1.4x faster than one on this machine, and the
same run's time varied 2x from hour to hour. This script counts instead: it runs each shape
under ``valgrind --tool=callgrind`` (every process: the driver and the TaskManagers), which
counts the instructions executed in user space whatever else the machine is doing (the same
total twice, seen here), at two input sizes, and divides the difference by the difference of
the sizes. Start-up, imports and the first job's costs are the same at both sizes and cancel
out, leaving the instructions per record of the job itself:

* ``local`` p=1: one source subtask and one reducer, threads of the driver, no hashing
  (one channel), no serialization;
* ``process`` p=2: two TaskManager processes of one slot each, a source and a reducer in
  each; each record is hashed to its reducer's key group (key selector + cached channel
  lookup), and half of them are marshalled, sent over TCP and unmarshalled.

``ideal speedup = 2 x local / process`` is what p=2 gives on two cores that run one process
each at full speed: the work is split evenly (half the records per process), so each core
does ``process / 2`` instructions per record of the input. Kernel time (socket and futex
calls) is not counted by callgrind; ``bench_scaleout.py`` prints the CPU seconds including it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))

#: backend -> (TaskManagers, slots each, parallelism), as bench_scaleout.SHAPES
SHAPES = {"local": (1, 1, 1), "process": (2, 1, 2)}


def run_child(backend: str, records: int) -> None:
    """Inside valgrind: start the backend's cluster, run W2 once on ``records``, check, stop."""
    sys.path.insert(0, HERE)
    import bench_scaleout
    from streamkernel.runtime.minicluster.minicluster import MiniCluster

    taskmanagers, slots, parallelism = SHAPES[backend]
    cluster = MiniCluster(taskmanagers, slots, backend=backend).start()
    directory = tempfile.mkdtemp(prefix="bench-instructions-")
    try:
        emitted = bench_scaleout.run_w2(parallelism, records, directory)
    finally:
        cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)
    if emitted != records:
        raise SystemExit(f"W2 on {backend}: {emitted} running counts, expected {records}")


def count_instructions(backend: str, records: int) -> tuple[int, int]:
    """(instructions of every process, number of processes) of one W2 run under callgrind."""
    with tempfile.TemporaryDirectory(prefix="callgrind-") as out:
        command = ["valgrind", "--tool=callgrind", "--trace-children=yes",
                   f"--callgrind-out-file={out}/callgrind.%p", f"--log-file={out}/log.%p",
                   sys.executable, os.path.abspath(__file__), "--child", backend, str(records)]
        done = subprocess.run(command, capture_output=True, text=True)
        logs = "".join(open(os.path.join(out, name)).read() for name in os.listdir(out) if name.startswith("log."))
    if done.returncode != 0:
        raise SystemExit(f"valgrind run of {backend} x {records} failed ({done.returncode}):\n{done.stderr[-2000:]}\n"
                         f"{logs[-2000:]}")
    totals = [int(n.replace(",", "")) for n in re.findall(r"Collected : ([\d,]+)", logs)]
    if not totals:
        raise SystemExit(f"no callgrind totals in the logs of {backend} x {records}:\n{logs[-2000:]}")
    return sum(totals), len(totals)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", type=int, default=20_000, help="records of the smaller run (default 20,000)")
    parser.add_argument("--large", type=int, default=120_000, help="records of the larger run (default 120,000)")
    parser.add_argument("--child", nargs=2, metavar=("BACKEND", "RECORDS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        run_child(args.child[0], int(args.child[1]))
        return 0
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_scaleout_instructions needs valgrind (Debian: apt-get install -y valgrind)")
    if not 0 < args.small < args.large:
        raise SystemExit(f"--small ({args.small}) must be positive and below --large ({args.large})")
    print(f"command: python bench/bench_scaleout_instructions.py --small {args.small} --large {args.large}")
    per_record = {}
    for backend in SHAPES:
        small, processes = count_instructions(backend, args.small)
        large, _ = count_instructions(backend, args.large)
        per_record[backend] = (large - small) / (args.large - args.small)
        taskmanagers, slots, parallelism = SHAPES[backend]
        print(f"{backend:8s} p={parallelism}  {processes} process(es)  {small:>15,d} instructions at "
              f"{args.small:,d} records, {large:>15,d} at {args.large:,d}: {per_record[backend]:8,.0f} per record")
    local, process = per_record["local"], per_record["process"]
    print(f"W2 across two processes costs {process / local:.2f}x the instructions per record of one local "
          f"subtask; ideal speedup on two dedicated cores: 2 x {local:,.0f} / {process:,.0f} = "
          f"{2 * local / process:.2f}x (target 1.5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
