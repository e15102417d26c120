"""Timers fire in rounds, as in PyFlink: ``programs/timers_in_rounds.py``.

PyFlink runs a Python function's timers in the Java operator: what ``on_timer`` (or a
trigger) registers or deletes reaches Java asynchronously and is applied between firing
rounds (flink-python's ``AbstractPythonFunctionOperator.advanceWatermark``: drain the
registrations, fire every due timer, finish the bundle, drain, fire again, until a round
fires nothing). Hence, for one watermark advance:

- a round fires the timers registered before it began whose time is <= the watermark, in
  timestamp order;
- what the callbacks register or delete during a round applies when the round ends, in the
  order made: a timer registered <= the watermark fires in the next round (after timers of
  later timestamps that were already due), a due timer deleted during its round fires all the
  same, a timer registered again while it is due in this round fires again in the next;
- the rounds go on in the same advance (the final watermark at end of input included) until
  one fires nothing.

The expectations are computed by :func:`rounds` from the program's script of timers, and by
:func:`continuous_firings_with_lateness` for the ContinuousEventTimeTrigger windows (whose
cleanup deletes the interval timer registered in the same round). Real PyFlink 2.3 prints
the same lines (``scripts/compare_with_pyflink.py``), the ``timer`` lines in the same order.
Timers of different keys at one timestamp fire in PyFlink in the order of Java's heap of key
groups, not in registration order: the program gives each key its own timestamps.
"""

from __future__ import annotations

import collections

from tests.compat.test_pyflink_programs import java_tuple, load, run

PROGRAM = "timers_in_rounds.py"
MAX_WATERMARK = 2**63 - 1


def rounds(elements, on_timer) -> list[tuple[str, int]]:
    """The (key, timestamp) of each fired event-time timer, in order, when the watermark
    jumps past every timer: rounds of the timers registered before each round began."""
    pending: dict[tuple[str, int], None] = {}
    for key, _, timestamps in elements:
        for timestamp in timestamps:
            pending[(key, timestamp)] = None
    fired = []
    while pending:
        due = sorted(pending, key=lambda timer: timer[1])  # no two keys share a time here
        pending = {}
        operations = []
        for key, timestamp in due:
            fired.append((key, timestamp))
            operations += [(action, (key, at)) for action, at in on_timer.get((key, timestamp), [])]
        for action, timer in operations:  # applied when the round ends, in order
            if action == "register":
                pending[timer] = None
            else:
                pending.pop(timer, None)
    return fired


def continuous_firings_with_lateness(first_ts: int, window_end: int, interval: int, lateness: int) -> int:
    """Firings of a ContinuousEventTimeTrigger window, all at the final watermark: timers at
    the first interval time, the max timestamp and the cleanup time (max timestamp + allowed
    lateness) fire in round 1; an interval firing registers the next interval timer, the
    cleanup deletes the pending one, both applied when the round ends."""
    max_ts = window_end - 1
    fire_time = min(first_ts - first_ts % interval + interval, max_ts)  # the "fire-time" state
    timers, firings = {fire_time, max_ts, max_ts + lateness}, 0
    while timers:
        operations = []
        for timer in sorted(timers):
            if timer == max_ts:
                firings += 1
            elif timer == fire_time:
                firings += 1
                fire_time = min(timer + interval, max_ts)
                operations.append(("register", fire_time))
            if timer == max_ts + lateness:  # cleanup: the trigger's clear() deletes its timer
                operations.append(("delete", fire_time))
                fire_time = None
        timers = set()
        for action, timer in operations:
            if action == "register":
                timers.add(timer)
            else:
                timers.discard(timer)
    return firings


def test_rounds_helper_follows_the_rule():
    assert rounds([("k", 1, [1, 5])], {("k", 1): [("register", 2)]}) == [("k", 1), ("k", 5), ("k", 2)]
    assert rounds([("k", 1, [1, 2])], {("k", 1): [("delete", 2)]}) == [("k", 1), ("k", 2)]
    assert rounds([("k", 1, [1, 2])], {("k", 1): [("register", 2)]}) == [("k", 1), ("k", 2), ("k", 2)]
    assert continuous_firings_with_lateness(2, 20, 7, 5) == 2  # 7 and 19; 14 deleted by cleanup at 24
    assert continuous_firings_with_lateness(19, 20, 7, 5) == 1  # the first interval timer is 19
    assert continuous_firings_with_lateness(0, 20, 6, 0) == 2


def test_timers_registered_in_on_timer_fire_in_later_rounds():
    program = load(PROGRAM)
    lines = run(PROGRAM)
    timers = [line for line in lines if line.startswith("timer ")]
    assert timers == [f"timer {key} {ts} watermark={MAX_WATERMARK}"
                      for key, ts in rounds(program.ELEMENTS, program.ON_TIMER)]
    windows = [line for line in lines if not line.startswith("timer ")]
    by_window: dict = collections.defaultdict(list)
    for meter, ts in program.SAMPLES:
        by_window[(meter, ts - ts % program.WINDOW_MS)].append(ts)
    expected = []
    for (meter, start), stamps in by_window.items():
        end = start + program.WINDOW_MS
        fired = continuous_firings_with_lateness(stamps[0], end, program.FIRE_EVERY_MS, program.LATENESS_MS)
        expected += [java_tuple(meter, start, end, len(stamps))] * fired
    assert sorted(windows) == sorted(expected)
