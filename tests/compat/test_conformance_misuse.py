"""Misuse of the DataStream API fails as in PyFlink: at once, catchable by the same built-in class.

``programs/misuse_errors.py`` tries each misuse in ``try/except`` and prints, per misuse, the
built-in exception classes the error is an instance of and the first line of its message.
The expectations below are PyFlink 2.3's behaviour, read from its source
(``pyflink/datastream/*.py``: the ``raise`` statements of the Python API) and from Flink's
Java checks (``Preconditions.checkArgument`` messages), which PyFlink surfaces as a
``py4j.protocol.Py4JJavaError`` (an ``Exception``, not a ``ValueError``) whose Java exception
carries the message. Where PyFlink's class is a built-in (``TypeError``, ``ValueError``,
``AttributeError``), streamkernel's error must be an instance of it, so ``except TypeError:``
in a PyFlink program still catches it; where PyFlink raises a plain ``Exception`` or a
Py4JJavaError, any ``Exception`` does. Each message must carry PyFlink's (or Flink's) text.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).parent / "programs" / "misuse_errors.py"
REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 180  # the program takes about a second; a loaded machine can be many times slower

#: misuse label -> (the built-in class PyFlink's exception is an instance of, a fragment of its message).
#: "Exception" means PyFlink raises a plain Exception or a Py4JJavaError (Flink's JVM check).
EXPECTED: dict[str, tuple[str, str]] = {
    "map(42)": ("TypeError", "MapFunction or a callable"),
    "flat_map('x')": ("TypeError", "FlatMapFunction or a callable"),
    "filter(None)": ("TypeError", "FilterFunction or a callable"),
    "key_by(3)": ("TypeError", "KeySelector or a callable"),
    "keyed.process(ProcessFunction)": ("TypeError", "KeyedProcessFunction"),
    "keyed.reduce(5)": ("TypeError", "ReduceFunction or a callable"),
    "keyed.sum(1.5)": ("TypeError", "field position must be of int or str type"),
    "partition_custom(5, f)": ("TypeError", "Partitioner or a callable"),
    "broadcast(5)": ("TypeError", "broadcast_state_descriptor must be MapStateDescriptor"),
    "OutputTag('')": ("ValueError", "OutputTag tag_id cannot be None or empty string"),
    "OutputTag(None)": ("ValueError", "OutputTag tag_id cannot be None or empty string"),
    "OutputTag('x', 5)": ("TypeError", "OutputTag type_info must be None, list or TypeInformation"),
    "ReducingStateDescriptor('r', 5, INT)": ("TypeError", "ReduceFunction or a callable"),
    "AggregatingStateDescriptor('a', 5, INT)": ("TypeError", "AggregateFunction"),
    "map.set_parallelism(0)": ("Exception", "The parallelism of an operator must be at least 1"),
    "env.set_parallelism(0)": ("Exception", "Parallelism must be at least one"),
    "from_collection.set_parallelism(2)": ("Exception", "The parallelism of non parallel operator must be 1."),
    "map.set_max_parallelism(0)": ("Exception", "The maximum parallelism must be greater than 0."),
    "map.set_max_parallelism(40000)": ("Exception", "Maximum parallelism must be between 1 and 32768. Found: 40000"),
    "env.set_max_parallelism(0)": ("Exception", "maxParallelism is out of bounds 0 < maxParallelism <= 32768. "
                                                "Found: 0"),
    "map.set_buffer_timeout(-2)": ("Exception", "timeout must be >= -1"),
    "keyed.set_parallelism(2)": ("Exception", "Set parallelism for KeyedStream is not supported"),
    "keyed.uid('u')": ("Exception", "Set uid for KeyedStream is not supported"),
    "keyed.rebalance()": ("Exception", "Cannot override partitioning for KeyedStream"),
    "project(0) on INT": ("Exception", "Only Tuple DataStreams can be projected."),
    "ds.window(...)": ("AttributeError", "'DataStream' object has no attribute 'window'"),
    "keyed.window().reduce(5)": ("TypeError", "ReduceFunction or a callable"),
    "keyed.window().aggregate(5)": ("TypeError", "AggregateFunction"),
    "Tumbling size 0": ("Exception", "TumblingEventTimeWindows parameters must satisfy abs(offset) < size"),
    "Tumbling offset >= size": ("Exception", "TumblingProcessingTimeWindows parameters must satisfy "
                                             "abs(offset) < size"),
    "Sliding slide 0": ("Exception", "SlidingEventTimeWindows parameters must satisfy abs(offset) < slide and "
                                     "size > 0"),
    "Session gap 0": ("Exception", "EventTimeSessionWindows parameters must satisfy 0 < size"),
    "connect.map(lambda)": ("TypeError", "CoMapFunction"),
    "connect.process(ProcessFunction)": ("TypeError", "CoProcessFunction or KeyedCoProcessFunction"),
    "union INT with STRING": ("Exception", "Cannot union streams of different types: Integer and String"),
    "union INT with untyped": ("Exception", "Cannot union streams of different types: Integer and "
                                            "PickledByteArrayTypeInfo"),
    "get_side_output same id other type": ("Exception", "A side output with a matching id was already requested "
                                                        "with a different type"),
    "execute() without operators": ("Exception", "No operators defined in streaming topology. Cannot execute."),
}

#: Not misuses in PyFlink: -1 is Flink's ExecutionConfig.PARALLELISM_DEFAULT.
ACCEPTED = ["map.set_parallelism(-1)", "env.set_parallelism(-1)"]

LINE = re.compile(r"^(?P<label>.+?): (?:ok|(?P<caught>[A-Za-z,]+) \| (?P<message>.*))$")


def parse(lines: list[str]) -> dict[str, tuple[str, str]]:
    """label -> (caught-by classes, message); "ok" lines give ("ok", "")."""
    outcomes = {}
    for line in lines[1:]:
        m = LINE.match(line)
        assert m, f"unexpected line {line!r}"
        outcomes[m["label"]] = (m["caught"] or "ok", m["message"] or "")
    return outcomes


def check_misuse(outcomes: dict[str, tuple[str, str]], label: str) -> None:
    """Assert the outcome of misuse ``label`` is PyFlink's (also run on real PyFlink's output,
    to check these expectations)."""
    builtin, fragment = EXPECTED[label]
    caught, message = outcomes[label]
    assert caught != "ok", f"{label}: no error"
    if builtin != "Exception":
        assert builtin in caught.split(","), f"{label}: caught by {caught}, PyFlink's is a {builtin}"
    assert fragment in message, f"{label}: {fragment!r} not in {message!r}"


def check(lines: list[str]) -> None:
    """Assert the whole output is PyFlink's behaviour."""
    assert lines[0] == "hasattr(DataStream, 'window'): False"
    outcomes = parse(lines)
    assert sorted(outcomes) == sorted([*EXPECTED, *ACCEPTED])
    for label in ACCEPTED:
        assert outcomes[label] == ("ok", ""), label
    for label in EXPECTED:
        check_misuse(outcomes, label)


@pytest.fixture(scope="module")
def output() -> list[str]:
    """The program's stdout lines, run as a user runs it (as test_pyflink_programs.run does)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, str(PROGRAM)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert proc.returncode == 0, f"exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout.splitlines()


@pytest.mark.parametrize("label", sorted(EXPECTED))
def test_misuse_fails_at_once_as_in_pyflink(output: list[str], label: str) -> None:
    check_misuse(parse(output), label)


def test_a_datastream_has_no_window_method_and_parallelism_default_is_accepted(output: list[str]) -> None:
    assert output[0] == "hasattr(DataStream, 'window'): False"
    outcomes = parse(output)
    assert sorted(outcomes) == sorted([*EXPECTED, *ACCEPTED])
    for label in ACCEPTED:
        assert outcomes[label] == ("ok", ""), label


def test_errors_pyflink_raises_from_the_jvm_are_value_errors_in_streamkernel(output: list[str]) -> None:
    # Flink's IllegalArgumentException/IllegalStateException: streamkernel's InvalidProgramError,
    # a ValueError (PyFlink shows a Py4JJavaError there, which `except Exception` catches).
    outcomes = parse(output)
    for label, (builtin, _) in EXPECTED.items():
        if builtin == "Exception":
            assert "ValueError" in outcomes[label][0].split(","), label
