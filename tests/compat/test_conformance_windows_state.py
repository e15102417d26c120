"""Session merges, custom and count triggers, window state, window_all, Reducing/AggregatingState.

Programs ``windows_session_merging.py``, ``windows_custom_triggers.py``,
``windows_all_variants.py`` and ``state_reducing_aggregating.py``; the expectations are
computed here from their data following PyFlink 2.3's window operator
(``pyflink/fn_execution/datastream/window/window_operator.py``):

- a session window merges with every in-flight window it intersects (touching counts);
  the merged window keeps the contents of *one* merged window and appends the others'
  (then the new element): the first window PyFlink's merge ``set`` yields, a set of the
  sorted windows hashed by PyFlink's ``TimeWindow.__hash__`` (:func:`pyflink_set_order`);
- every program's watermark lags by more than its input's span, so event-time windows fire
  at end of input, in timestamp order (no two keys share a timer: every tag's lines are
  compared in order, except ``at-end``, whose windows all fire at Long.MAX_VALUE);
- a window's cleanup (at ``max_timestamp + allowed_lateness``) calls the window function's
  ``clear``; a count window's cleanup time is Long.MAX_VALUE, so its ``clear`` is never called;
- several programs print from several window operators: lines are grouped by their tag (the
  first word), the order across tags is not defined.

Real PyFlink 2.3.0 prints exactly these lines (``scripts/compare_with_pyflink.py``; in
tag order too). Two PyFlink quirks are left out of the programs on purpose: a state of
the same name in ``window_state()`` and ``global_state()`` is one state object in PyFlink
(both see the window's namespace), and a PyFlink ReducingState/AggregatingState merged from
two in-flight sessions at once keeps only the first one's value.
"""

from __future__ import annotations

import collections

from tests.compat.test_pyflink_programs import load, run

MAX_LONG = 2**63 - 1


# --------------------------------------------------------------------------- helpers
def by_tag(lines: list[str]) -> dict[str, list[str]]:
    """The lines grouped by their first word, each group in printed order."""
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for line in lines:
        groups[line.split(" ", 1)[0]].append(line)
    return dict(groups)


def pyflink_hash(window: tuple[int, int]) -> int:
    """PyFlink's ``TimeWindow.__hash__``: ``start + mod_inverse(2 * end + 1)``."""
    x = (window[1] << 1) + 1
    inverse = x * x * x
    for _ in range(3):
        inverse *= 2 - x * inverse
    return window[0] + inverse


class _Hashed:
    def __init__(self, window):
        self.window = window

    def __hash__(self):
        return pyflink_hash(self.window)

    def __eq__(self, other):
        return self.window == other.window


def pyflink_set_order(windows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """How PyFlink's set of merged windows (added in sorted order) iterates."""
    members = set()
    for window in sorted(windows):
        members.add(_Hashed(window))
    return [member.window for member in members]


def sessions(elements, timestamp, gap) -> dict:
    """PyFlink's MergingWindowSet per key, in arrival order: {key: {window: [elements]}}.

    ``elements`` are (key, ...) records; ``timestamp(e)``, ``gap(e)`` give its window
    ``[ts, ts + gap)``. A new window merging with in-flight windows keeps the contents of
    the first in-flight one in PyFlink's set order, then the others', then the new element.
    """
    per_key: dict = collections.defaultdict(dict)
    for element in elements:
        windows = per_key[element[0]]
        new = (timestamp(element), timestamp(element) + gap(element))
        merged = [w for w in windows if w[0] <= new[1] and w[1] >= new[0]]
        if not merged:
            windows[new] = [element]
            continue
        start = min([new[0]] + [w[0] for w in merged])
        end = max([new[1]] + [w[1] for w in merged])
        order = [w for w in pyflink_set_order(merged + [new]) if w != new]
        contents = [e for w in order for e in windows.pop(w)]
        windows[(start, end)] = contents + [element]
    return per_key


def end_firings(per_key: dict) -> list[tuple]:
    """(key, window, contents) of every session, in the order they fire at end of input."""
    return sorted(((key, window, contents) for key, windows in per_key.items()
                   for window, contents in windows.items()), key=lambda f: f[1][1])


# --------------------------------------------------------------------------- sessions
def test_session_merging_contents_order_aggregates_and_lateness():
    """Sessions bridged by an out-of-order element: contents in PyFlink's order, global_state
    across a key's sessions, reduce+WindowFunction, aggregate+ProcessWindowFunction (dynamic
    gaps), and clear() at max_timestamp + allowed_lateness seen by the key's next session."""
    program = load("windows_session_merging.py")
    groups = by_tag(run("windows_session_merging.py"))

    clicks = sessions(program.CLICKS, lambda c: c[1], lambda c: program.GAP)
    firings = end_firings(clicks)
    seen = collections.Counter()
    expected = []
    for key, (start, end), contents in firings:
        expected.append(f"contents {key} [{start},{end}) {[c[2] for c in contents]} after {seen[key]}")
        seen[key] += 1
    assert groups["contents"] == expected

    assert groups["largest"] == [
        f"largest {key} [{start},{end}) {[max(c[2] for c in contents)]}" for key, (start, end), contents in firings]

    expected = []
    for key, (start, end), contents in firings:
        # cleanup timers (end - 1 + LATENESS) of the key's sessions that fired before this one
        cleared = sum(1 for k, w, _ in firings if k == key and w[1] - 1 + program.LATENESS < end - 1)
        expected.append(f"lateness {key} [{start},{end}) {sum(c[2] for c in contents)} cleared {cleared}")
    assert groups["lateness"] == expected

    visits = sessions(program.VISITS, lambda v: v[1], lambda v: v[3])
    assert groups["average"] == [
        f"average {key} [{start},{end}) {sum(v[2] for v in contents)}/{len(contents)} at True"
        for key, (start, end), contents in end_firings(visits)]
    assert set(groups) == {"contents", "largest", "lateness", "average"}


def test_session_data_merges_bridging_windows():
    """The data does what the test is about: some session grows from three windows at once,
    and PyFlink keeps a later window's contents first somewhere (not always the earliest)."""
    program = load("windows_all_variants.py")
    merged = sessions([("all",) + f for f in program.FILLS], lambda f: f[2], lambda f: program.GAP)["all"]
    assert any(contents[0] != min(contents, key=lambda f: f[2]) for contents in merged.values())
    clicks = load("windows_session_merging.py")
    assert len(sessions(clicks.CLICKS, lambda c: c[1], lambda c: clicks.GAP)["a"][(1, 30)]) == 3


# --------------------------------------------------------------------------- window_all
def test_window_all_reduce_aggregate_process_and_count_windows():
    """window_all over tumbling event-time, session and count windows (one key: every
    window of a tag fires in order; count windows on their last element)."""
    program = load("windows_all_variants.py")
    fills = program.FILLS
    lines = run("windows_all_variants.py")
    groups = by_tag(lines)

    tumbling = collections.defaultdict(list)
    for fill in fills:
        tumbling[fill[1] - fill[1] % program.SIZE].append(fill)
    starts = sorted(tumbling)
    most = [max(tumbling[s], key=lambda f: f[2]) for s in starts]  # the first of equal ones wins
    assert groups["most"] == [f"most [{s},{s + program.SIZE}) {[m]}" for s, m in zip(starts, most)]
    assert groups["stats"] == [
        f"stats [{s},{s + program.SIZE}) {[(sum(f[2] for f in tumbling[s]), len(tumbling[s]), sorted({f[0] for f in tumbling[s]}))]} "
        f"after {i} window 0" for i, s in enumerate(starts)]

    merged = end_firings(sessions([("all",) + f for f in fills], lambda f: f[2], lambda f: program.GAP))
    assert groups["sessions"] == [f"sessions [{start},{end}) {[c[1:] for c in contents]} after {i} window 0"
                                  for i, (_, (start, end), contents) in enumerate(merged)]

    triples = [fills[i:i + 3] for i in range(0, len(fills) - 2, 3)]  # the last, partial one never fires
    assert [line for line in lines if line.startswith("(")] == [
        str((t[0][0], t[0][1], sum(f[2] for f in t))) for t in triples]

    size, slide = 4, 3  # CountSlidingWindowAssigner.of(4, 3): window k holds positions 3k .. 3k+3
    complete = [k for k in range(len(fills)) if slide * k + size <= len(fills)]
    assert groups["sliding"] == [f"sliding #{k} {fills[slide * k:slide * k + size]} after {k} window 0"
                                 for k in complete]


# --------------------------------------------------------------------------- triggers
def custom_trigger_firings(readings, size) -> list[str]:
    """EverySecondOrEnd on tumbling windows, as PyFlink's operator runs it: each element is
    added, then the trigger decides (PURGE on a negative reading drops the contents and the
    count; FIRE every second counted element); at end of input each window's timer at its
    max timestamp answers FIRE_AND_PURGE (nothing is emitted for empty contents), and the
    cleanup at the same time calls clear(), which the key's later firings see."""
    contents: dict = collections.defaultdict(list)
    counts: collections.Counter = collections.Counter()
    window_firings: collections.Counter = collections.Counter()
    key_firings: collections.Counter = collections.Counter()
    cleared: collections.Counter = collections.Counter()
    out = []

    def fire(key, start):
        window_firings[(key, start)] += 1
        key_firings[key] += 1
        out.append(f"custom {key} [{start},{start + size}) {[r[2] for r in contents[(key, start)]]} "
                   f"firing {window_firings[(key, start)]} of key {key_firings[key]} cleared {cleared[key]}")

    for reading in readings:
        key, ts, value = reading
        pane = (key, ts - ts % size)
        contents[pane].append(reading)
        if value < 0:
            counts[pane] = 0
            contents[pane] = []
            continue
        counts[pane] += 1
        if counts[pane] % 2 == 0:
            fire(*pane)
    for pane in sorted(contents, key=lambda p: p[1]):  # one timer per window, no two at one time
        if contents[pane]:
            fire(*pane)
        cleared[pane[0]] += 1
    return out


def test_custom_trigger_with_partitioned_state_purge_and_window_state():
    """A Trigger subclass keeping a ReducingState count per window (ctx.get_partitioned_state),
    FIRE / PURGE / FIRE_AND_PURGE; window_state() counts a window's firings, global_state()
    the key's, and the ProcessWindowFunction's clear() runs at each window's cleanup."""
    program = load("windows_custom_triggers.py")
    groups = by_tag(run("windows_custom_triggers.py"))
    assert groups["custom"] == custom_trigger_firings(program.READINGS, program.SIZE)


def test_count_windows_with_count_purging_and_event_time_triggers():
    """count_window(n), count_window(n, slide), CountTrigger.of(2) on 4-element windows (fires
    twice, contents kept), PurgingTrigger.of(CountTrigger.of(2)) on 3-element windows, and an
    EventTimeTrigger on count windows (every window, partial ones too, fires at end of input).
    A count window is never cleaned up: clear() is never called (``cleared 0``)."""
    program = load("windows_custom_triggers.py")
    groups = by_tag(run("windows_custom_triggers.py"))
    orders = program.ORDERS

    positions: dict = collections.defaultdict(list)  # key -> its quantities in arrival order
    tumbling, sliding, every_2, purging = [], [], [], []
    key_firings = {"tumbling": collections.Counter(), "every-2": collections.Counter()}
    for key, quantity in orders:
        seen = positions[key]
        seen.append(quantity)
        n = len(seen)
        if n % 3 == 0:  # count_window(3): window (n - 1) // 3 is complete
            key_firings["tumbling"][key] += 1
            tumbling.append(f"tumbling {key} #{(n - 1) // 3} {seen[n - 3:]} firing 1 of key "
                            f"{key_firings['tumbling'][key]} cleared 0")
        if n >= 4 and (n - 4) % 2 == 0:  # count_window(4, 2): window k holds positions 2k .. 2k+3
            sliding.append(f"sliding {key} #{(n - 4) // 2} {seen[n - 4:]}")
        if n % 2 == 0:  # 4-element windows, CountTrigger.of(2): fires at the 2nd and 4th element
            window = (n - 1) // 4
            key_firings["every-2"][key] += 1
            every_2.append(f"every-2 {key} #{window} {seen[4 * window:n]} firing {2 - (n % 4 == 2)} of key "
                           f"{key_firings['every-2'][key]} cleared 0")
        if n % 3 == 2:  # 3-element windows, PurgingTrigger.of(CountTrigger.of(2))
            purging.append(f"purging {key} #{(n - 1) // 3} {seen[n - 2:]}")
    assert groups["tumbling"] == tumbling
    assert groups["sliding"] == sliding
    assert groups["every-2"] == every_2
    assert groups["purging"] == purging
    at_end = [f"at-end {key} #{i // 5} {seen[i:i + 5]}" for key, seen in positions.items()
              for i in range(0, len(seen), 5)]
    assert sorted(groups["at-end"]) == sorted(at_end)  # all at Long.MAX_VALUE: Java's heap decides the order
    assert set(groups) == {"custom", "tumbling", "sliding", "every-2", "purging", "at-end"}


# --------------------------------------------------------------------------- state
def test_reducing_and_aggregating_state():
    """ReducingState (lambda and ReduceFunction) and AggregatingState with TTL: add/get/clear;
    get() of an empty state is None; AggregatingState.add(None) clears it; the same states
    through a ProcessWindowFunction's global_state() accumulate across count windows."""
    program = load("state_reducing_aggregating.py")
    groups = by_tag(run("state_reducing_aggregating.py"))

    def stats_text(values):
        return None if not values else f"{sum(values)}/{len(values)} in [{min(values)},{max(values)}]"

    reducing: dict = collections.defaultdict(list)
    aggregating: dict = collections.defaultdict(list)
    ledger = []
    for account, operation, amount in program.OPERATIONS:
        if operation == "add":
            reducing[account].append(amount)
            aggregating[account].append(amount)
        elif operation == "clear":
            reducing[account] = []
        else:  # "reset" and "none" (add(None)) both clear the aggregating state
            aggregating[account] = []
        values = reducing[account]
        ledger.append(f"ledger {account} {operation} {amount}: total {sum(values) if values else None} "
                      f"smallest {min(values) if values else None} stats {stats_text(aggregating[account])}")
    assert groups["ledger"] == ledger

    windows, seen, sums = [], collections.defaultdict(list), collections.defaultdict(list)
    for account, _, amount in program.OPERATIONS:
        seen[account].append(amount)
        if len(seen[account]) % 2 == 0:
            pair = seen[account][-2:]
            sums[account].append(sum(pair))
            windows.append(f"windows {account} {pair} running {sum(seen[account])} sums {stats_text(sums[account])}")
    assert groups["windows"] == windows
