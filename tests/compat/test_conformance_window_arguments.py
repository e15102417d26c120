"""Window assigners and triggers refuse bad arguments in Flink's words (issue 31).

``programs/window_argument_errors.py`` builds each assigner and trigger with bad arguments and
prints, per case, the built-in classes of the error and its first line. :data:`PYFLINK` is what
real PyFlink 2.3.0 printed for the same program (its ``streamkernel.`` prefix replaced by
``pyflink.``; run on 2026-11-29 with ``/work/main/.flink-tools``, whose assigners and triggers are
plain Python: no JVM is involved in any of these cases).

Where PyFlink raises, streamkernel's message starts with PyFlink's text (then gives the values
and the fix) and its error is a ``ValueError`` (PyFlink's is a plain ``Exception``; Flink's Java
assigners throw ``IllegalArgumentException``): ``except Exception`` catches both. Where PyFlink
accepts a value that can never work, streamkernel refuses it at once (:data:`REFUSED_EARLY`, with
what PyFlink does later). A wrong type is a ``TypeError`` (PyFlink's ``AttributeError`` on
``to_milliseconds`` is an accident of duck typing).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).parent / "programs" / "window_argument_errors.py"
REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 120  # the program takes well under a second; a loaded machine can be many times slower
LINE = re.compile(r"^(?P<label>.+?): (?:ok|(?P<caught>[A-Za-z,]+) \| (?P<message>.*))$")

#: Real PyFlink 2.3.0's output of the program, verbatim.
PYFLINK = """
Tumbling event size 0: Exception | TumblingEventTimeWindows parameters must satisfy abs(offset) < size
Tumbling event size -1: Exception | TumblingEventTimeWindows parameters must satisfy abs(offset) < size
Tumbling event offset == size: Exception | TumblingEventTimeWindows parameters must satisfy abs(offset) < size
Tumbling event offset -size: Exception | TumblingEventTimeWindows parameters must satisfy abs(offset) < size
Tumbling event offset < size: ok
Tumbling processing size 0: Exception | TumblingProcessingTimeWindows parameters must satisfy abs(offset) < size
Tumbling processing offset > size: Exception | TumblingProcessingTimeWindows parameters must satisfy abs(offset) < size
Tumbling event size str: AttributeError | 'str' object has no attribute 'to_milliseconds'
Sliding event size 0: Exception | SlidingEventTimeWindows parameters must satisfy abs(offset) < slide and size > 0
Sliding event size -1: Exception | SlidingEventTimeWindows parameters must satisfy abs(offset) < slide and size > 0
Sliding event slide 0: Exception | SlidingEventTimeWindows parameters must satisfy abs(offset) < slide and size > 0
Sliding event slide -1: Exception | SlidingEventTimeWindows parameters must satisfy abs(offset) < slide and size > 0
Sliding event offset == slide: Exception | SlidingEventTimeWindows parameters must satisfy abs(offset) < slide and size > 0
Sliding event slide > size: ok
Sliding processing size 0: Exception | SlidingProcessingTimeWindows parameters must satisfy abs(offset) < slide and size > 0
Sliding processing slide 0: Exception | SlidingProcessingTimeWindows parameters must satisfy abs(offset) < slide and size > 0
Sliding processing offset -slide: Exception | SlidingProcessingTimeWindows parameters must satisfy abs(offset) < slide and size > 0
Session event gap 0: Exception | EventTimeSessionWindows parameters must satisfy 0 < size
Session event gap -1: Exception | EventTimeSessionWindows parameters must satisfy 0 < size
Session processing gap 0: Exception | ProcessingTimeSessionWindows parameters must satisfy 0 < size
Dynamic event gap 0 at assign: Exception | Dynamic session time gap must satisfy 0 < gap
Dynamic event gap -5 at assign: Exception | Dynamic session time gap must satisfy 0 < gap
Dynamic event gap 5 at assign: ok
Count tumbling 0: ok
Count tumbling -1: ok
Count sliding size 0: ok
Count sliding slide 0: ok
Count sliding slide -1: ok
CountTrigger 0: ok
CountTrigger -1: ok
ContinuousEventTimeTrigger 0: ok
ContinuousEventTimeTrigger -1: ok
ContinuousProcessingTimeTrigger 0: ok
PurgingTrigger None: ok
PurgingTrigger 5: ok
GlobalWindows: ok
""".strip().splitlines()

#: label -> what PyFlink does instead of refusing the value at once.
REFUSED_EARLY = {
    "Count tumbling 0": "the job fails with ZeroDivisionError (count // 0)",
    "Count tumbling -1": "windows numbered backwards, fired by a CountTrigger(-1) on every element",
    "Count sliding size 0": "windows that never fill",
    "Count sliding slide 0": "the job fails with ZeroDivisionError",
    "Count sliding slide -1": "windows assigned backwards",
    "CountTrigger 0": "fires on every element",
    "CountTrigger -1": "fires on every element",
    "ContinuousEventTimeTrigger 0": "the job fails with ZeroDivisionError (timestamp % 0)",
    "ContinuousEventTimeTrigger -1": "timers in the past, firing on every watermark",
    "ContinuousProcessingTimeTrigger 0": "the job fails with ZeroDivisionError",
    "PurgingTrigger None": "the job fails with AttributeError on the first element",
    "PurgingTrigger 5": "the job fails with AttributeError on the first element",
}


def parse(lines: list[str]) -> dict[str, tuple[str, str]]:
    """label -> (caught-by classes or "ok", message)."""
    outcomes = {}
    for line in lines:
        match = LINE.match(line)
        assert match, f"unexpected line {line!r}"
        outcomes[match["label"]] = (match["caught"] or "ok", match["message"] or "")
    return outcomes


@pytest.fixture(scope="module")
def ours() -> dict[str, tuple[str, str]]:
    """The program's outcomes under streamkernel, run as a user runs it."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, str(PROGRAM)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    return parse(done.stdout.splitlines())


PYFLINK_OUTCOMES = parse(PYFLINK)


def test_the_program_and_pyflinks_recorded_output_have_the_same_cases(ours) -> None:
    assert list(ours) == list(PYFLINK_OUTCOMES)
    assert set(REFUSED_EARLY) <= {label for label, (caught, _) in PYFLINK_OUTCOMES.items() if caught == "ok"}


@pytest.mark.parametrize("label", [label for label, (caught, _) in PYFLINK_OUTCOMES.items()
                                   if caught not in ("ok", "AttributeError")])
def test_a_bad_argument_pyflink_refuses_is_refused_with_its_text(ours, label: str) -> None:
    caught, message = ours[label]
    assert "ValueError" in caught.split(","), (label, caught)
    expected = PYFLINK_OUTCOMES[label][1]
    assert message.startswith(expected + ": "), (label, message)


def test_a_wrong_type_is_a_type_error_naming_the_argument(ours) -> None:
    assert PYFLINK_OUTCOMES["Tumbling event size str"] == ("AttributeError",
                                                          "'str' object has no attribute 'to_milliseconds'")
    caught, message = ours["Tumbling event size str"]
    assert "TypeError" in caught.split(",")
    assert message.startswith("TumblingEventTimeWindows: size must be a Duration, a Time") and "'1 s'" in message


@pytest.mark.parametrize("label", sorted(REFUSED_EARLY))
def test_a_value_that_can_never_work_is_refused_at_once(ours, label: str) -> None:
    caught, message = ours[label]
    assert caught != "ok", f"{label}: accepted (PyFlink accepts it too, then: {REFUSED_EARLY[label]})"
    assert ("TypeError" if label.startswith("PurgingTrigger") else "ValueError") in caught.split(","), (label, caught)


def test_what_pyflink_accepts_for_good_reason_is_accepted(ours) -> None:
    accepted = [label for label, (caught, _) in PYFLINK_OUTCOMES.items() if caught == "ok" and label not in REFUSED_EARLY]
    assert accepted == ["Tumbling event offset < size", "Sliding event slide > size", "Dynamic event gap 5 at assign",
                        "GlobalWindows"]
    assert all(ours[label] == ("ok", "") for label in accepted)
