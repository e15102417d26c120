"""``streamkernel memory taskmanager|jobmanager [-D key=value ...] [--json]``: a process's memory
breakdown, computed as Flink 2.x computes it (docs/memory.md).

Without any size configured, Flink's shipped config.yaml's process size is used (TaskManager
1728m, JobManager 1600m) and the output says so. A bad configuration is one line on stderr and
exit code 1 (2: bad arguments). What Flink logs while it derives the sizes (a size capped to its
min or max, a heap below the recommended minimum, ...) is printed on stderr as Flink's
``BashJavaUtils`` prints it (``INFO  [] - The derived from fraction ...``), never in stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from typing import Iterator, Sequence

from streamkernel.arguments import parse_dynamic_properties
from streamkernel.errors import StreamKernelError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="streamkernel memory",
                                     description="The memory breakdown of a TaskManager or the JobManager, as Flink "
                                                 "computes it from the taskmanager.memory.* / jobmanager.memory.* keys.")
    parser.add_argument("process", choices=("taskmanager", "jobmanager"))
    parser.add_argument("-D", dest="dynamic", action="append", default=[], metavar="KEY=VALUE",
                        help="a Flink configuration entry (e.g. taskmanager.memory.process.size=8g); repeatable")
    parser.add_argument("--json", action="store_true",
                        help="print Flink's configuration keys with byte values instead of the text box")
    return parser


class _FlinkLogFormat(logging.Formatter):
    """Flink's console pattern as BashJavaUtils prints it: ``INFO  [] - message``, ``WARN  [] - message``."""

    def format(self, record: logging.LogRecord) -> str:
        level = "WARN" if record.levelno == logging.WARNING else record.levelname
        return f"{level:<5} [] - {record.getMessage()}"


@contextlib.contextmanager
def _calculation_logs_on_stderr() -> Iterator[None]:
    """The memory calculation's INFO and WARN lines on stderr while the block runs."""
    logger = logging.getLogger("streamkernel.runtime.memory")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_FlinkLogFormat())
    handler.setLevel(logging.INFO)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def main(argv: Sequence[str]) -> int:
    """Run ``streamkernel memory ...`` (``argv`` after ``memory``); returns the exit status."""
    from streamkernel.common.options import TaskManagerOptions, validate_configuration
    from streamkernel.runtime import memory

    args = _parser().parse_args(list(argv))
    try:
        configuration = parse_dynamic_properties(args.dynamic)
        validate_configuration(configuration)
        sized = memory.with_default_process_size(configuration, args.process)
        with _calculation_logs_on_stderr():
            if args.process == "taskmanager":
                spec: object = memory.task_executor_process_spec_from_config(sized)
            else:
                spec = memory.job_manager_process_spec_from_config(sized)
    except (ValueError, StreamKernelError) as error:
        print(f"streamkernel memory {args.process}: {error}".splitlines()[0], file=sys.stderr)
        return 1
    from streamkernel.runtime.memory.breakdown import breakdown_keys, render_breakdown

    if args.json:
        print(json.dumps(breakdown_keys(spec), indent=2))  # type: ignore[arg-type]
        return 0
    defaulted = sized.keys() - configuration.keys()
    key = f"{args.process}.memory.process.size"
    title = "TaskManager memory" if args.process == "taskmanager" else "JobManager memory"
    title += f" ({key}: {sized[key]}{', default of config.yaml' if defaulted else ''})" if key in sized else ""
    slots = (TaskManagerOptions.NUM_TASK_SLOTS.get(configuration)
             if TaskManagerOptions.NUM_TASK_SLOTS.key() in configuration else None)
    print(render_breakdown(spec, title, slots))  # type: ignore[arg-type]
    return 0
