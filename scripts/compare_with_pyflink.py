"""Run PyFlink-style programs under real PyFlink and under streamkernel, and compare what they print.

A development tool, not part of the test suite (real PyFlink needs its own venv, a JVM and
~15 s per program). The conformance tests in ``tests/compat`` compute their expectations in
Python; this script is how a developer checks those expectations against the real thing::

    python3 -m venv /work/pyflink-venv && /work/pyflink-venv/bin/pip install apache-flink==2.3.0
    python scripts/compare_with_pyflink.py --pyflink-python /work/pyflink-venv/bin/python \\
        tests/compat/programs/session_fixed_gap.py [more programs] [-- program arguments]

Each program is copied with ``streamkernel.`` replaced by ``pyflink.`` (the only difference
a program may have) and both are run from the same working directory. Lines are compared
as sorted multisets without Flink's ``N> `` subtask prefix unless ``--ordered`` is given;
the script prints a unified diff per program that differs and exits 1 if any does.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SUBTASK_PREFIX = re.compile(r"^\d+> ")


def run(python: str, program: Path, args: list[str], cwd: Path, path_prefix: str | None,
        timeout: float) -> tuple[int | str, list[str], str]:
    """Run ``program`` with ``python``; its exit code ("timeout" when it ran too long), stdout lines and stderr.

    The program runs in its own process group, killed whole on a timeout (PyFlink's JVM
    and Python workers included).
    """
    env = dict(os.environ)
    if path_prefix:  # PyFlink starts its Python workers with ``python`` from PATH
        env["PATH"] = path_prefix + os.pathsep + env.get("PATH", "")
    else:
        env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.Popen([python, str(program), *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        return "timeout", out.splitlines(), err
    return proc.returncode, out.splitlines(), err


def normalised(lines: list[str], ordered: bool) -> list[str]:
    """The lines as compared: as printed, or sorted without subtask prefixes."""
    return list(lines) if ordered else sorted(SUBTASK_PREFIX.sub("", line) for line in lines)


def compare(program: Path, args: list[str], pyflink_python: str, ordered: bool, timeout: float) -> bool:
    """Run one program both ways; print the differences; True when the outputs are equal."""
    with tempfile.TemporaryDirectory(prefix="compare-pyflink-") as tmp:
        work = Path(tmp)
        pyflink_copy = work / program.name
        pyflink_copy.write_text(program.read_text().replace("streamkernel.", "pyflink."))
        (work / "pyflink").mkdir()
        (work / "streamkernel").mkdir()
        rc_pf, out_pf, err_pf = run(pyflink_python, pyflink_copy, args, work / "pyflink",
                                    str(Path(pyflink_python).parent), timeout)
        rc_sk, out_sk, err_sk = run(sys.executable, program.resolve(), args, work / "streamkernel", None, timeout)
    same = rc_pf == rc_sk and normalised(out_pf, ordered) == normalised(out_sk, ordered)
    print(f"{'same' if same else 'DIFFERENT'}: {program.name} (exit codes: pyflink {rc_pf}, streamkernel {rc_sk})")
    if not same:
        sys.stdout.writelines(difflib.unified_diff(
            [line + "\n" for line in normalised(out_pf, ordered)],
            [line + "\n" for line in normalised(out_sk, ordered)], "pyflink", "streamkernel"))
        for name, rc, err in (("pyflink", rc_pf, err_pf), ("streamkernel", rc_sk, err_sk)):
            if rc:
                print(f"--- {name} stderr (last lines):\n" + "\n".join(err.splitlines()[-15:]))
    return same


def main(argv: list[str]) -> int:
    """Compare every program given; exit status 1 if any differs."""
    if "--" in argv:
        split = argv.index("--")
        argv, program_args = argv[:split], argv[split + 1:]
    else:
        program_args = []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pyflink-python", required=True, help="the python of a venv with apache-flink installed")
    parser.add_argument("--ordered", action="store_true", help="compare lines in order (parallelism-1 programs)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds a run may take (default 300)")
    parser.add_argument("programs", nargs="+", type=Path)
    options = parser.parse_args(argv)
    results = [compare(p, program_args, options.pyflink_python, options.ordered, options.timeout) for p in options.programs]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
