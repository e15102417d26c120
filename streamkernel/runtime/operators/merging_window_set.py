"""MergingWindowSet: the in-flight windows of one key under a merging (session) assigner.

Flink's ``MergingWindowSet``. When windows merge, their contents are merged into the
state of *one* of them, not moved: each in-flight window maps to its **state window**, the
namespace under which its contents live. A session that grew from windows ``a`` and ``b``
into ``c`` keeps its elements in ``a``'s namespace (``c -> a``), so a merge costs one
``merge_namespaces`` of the other windows' state, never a copy of the surviving one.

The mapping is kept in keyed state (a ValueState of the key, void namespace, named
``"merging-window-set"``), so it is part of every checkpoint and follows its key group on
rescale. The window operator builds a set per element of the key, adds windows, and
calls :meth:`MergingWindowSet.persist` once done, which writes the mapping back only if
it changed.

:func:`add_to_merging_windows` is the window operator's per-record work for a merging
assigner (Flink's merging branch of ``WindowOperator.processElement``).

Rationale of :meth:`add_window` (Flink's algorithm): the new window is added to the
in-flight windows, the assigner decides which of them merge; for each merge the result
window takes over the state window of one merged window, the other merged windows' state
windows are merged into it (``merge_function``), and the result of the merge that
swallowed the new window is returned. A window that merges with nothing maps to itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

from streamkernel.datastream.state import ValueStateDescriptor
from streamkernel.datastream.window_assigners import MergingWindowAssigner
from streamkernel.datastream.window_triggers import TriggerResult
from streamkernel.errors import InvalidProgramError

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.operators.window import WindowOperator

__all__ = ["MERGING_WINDOW_SET_DESCRIPTOR", "MergeFunction", "MergingWindowSet", "add_to_merging_windows"]

#: keyed state (void namespace) holding the ``{window: state_window}`` mapping of a key
MERGING_WINDOW_SET_DESCRIPTOR = ValueStateDescriptor("merging-window-set")

#: ``merge_function(merge_result, merged_windows, state_window_result, merged_state_windows)``
MergeFunction = Callable[[Any, list, Any, list], None]


class MergingWindowSet:
    """The windows of one key in flight under a merging assigner, each with its state window.

    ``mapping_state`` is a ValueState (of the current key) holding the mapping dict; it is
    read once here and written back by :meth:`persist` when the mapping changed.
    """

    __slots__ = ("_assigner", "_state", "_mapping", "_initial")

    def __init__(self, window_assigner: Any, mapping_state: Any) -> None:
        self._assigner = window_assigner
        self._state = mapping_state
        stored = mapping_state.value()
        self._mapping: dict = dict(stored) if stored else {}
        self._initial: dict = dict(self._mapping)

    @property
    def mapping(self) -> dict:
        """The in-flight windows and their state windows (read-only view by convention)."""
        return self._mapping

    def get_state_window(self, window: Any) -> Optional[Any]:
        """The namespace holding ``window``'s contents, or None if ``window`` is not in flight."""
        return self._mapping.get(window)

    def retire_window(self, window: Any) -> None:
        """Forget ``window`` (it was purged or dropped as late); it must be in flight."""
        if self._mapping.pop(window, None) is None:
            raise KeyError(f"window {window!r} is not in the in-flight window set {list(self._mapping)}")

    def persist(self) -> None:
        """Write the mapping back to keyed state if it changed (clear it when empty)."""
        if self._mapping != self._initial:
            if self._mapping:
                self._state.update(dict(self._mapping))
            else:
                self._state.clear()
            self._initial = dict(self._mapping)

    def add_window(self, new_window: Any, merge_function: MergeFunction) -> Any:
        """Add ``new_window``, merging it (and others) as the assigner decides.

        Returns the window ``new_window`` ended up in: itself, or the merge result that
        swallowed it. ``merge_function`` is called once per merge that involves windows
        already in flight (Flink's rule: a new window merged only into itself is not a merge).
        """
        mapping = self._mapping
        # An identical window already in flight holds state: it merges as an existing window.
        existing = new_window in mapping
        windows = list(mapping)
        if not existing:
            windows.append(new_window)
        merges: list[tuple[Any, list]] = []
        self._assigner.merge_windows(windows, _CollectMerges(merges))

        result_window = new_window
        merged_new_window = False
        for merge_result, merged_windows in merges:
            if new_window in merged_windows:
                merged_new_window = True
                result_window = merge_result
                if not existing:  # the new window never had state of its own
                    merged_windows.remove(new_window)
            # the merge result takes over the state window of one of the merged windows
            target_state_window = mapping[merged_windows[0]]
            merged_state_windows = []
            for window in merged_windows:
                state_window = mapping.pop(window, None)
                if state_window is not None and state_window != target_state_window:
                    merged_state_windows.append(state_window)
            mapping[merge_result] = target_state_window
            # an existing window "merged" with the new one without growing is no merge
            if not (len(merged_windows) == 1 and merged_windows[0] == merge_result):
                merge_function(merge_result, merged_windows, target_state_window, merged_state_windows)

        if not existing and not merged_new_window:
            mapping[new_window] = new_window
        return result_window

    def __repr__(self) -> str:
        return f"MergingWindowSet({self._mapping!r})"


class _CollectMerges(MergingWindowAssigner.MergeCallback):
    """Records each merge the assigner reports as ``(merge_result, [merged windows])``."""

    def __init__(self, merges: list) -> None:
        self._merges = merges

    def merge(self, to_be_merged: Any, merge_result: Any) -> None:
        """Remember that ``to_be_merged`` become ``merge_result``."""
        self._merges.append((merge_result, list(to_be_merged)))


def add_to_merging_windows(operator: "WindowOperator", key: Any, value: Any, timestamp: Any, windows: Any) -> bool:
    """Add a record to its (session) windows of ``key``, merging windows as the assigner says.

    Flink's merging branch of ``processElement``: each window is added to the key's
    MergingWindowSet; when windows merge the trigger hears ``on_merge``, the merged panes'
    trigger state and cleanup timers go, and their contents are merged into the state
    window of the result. A late result window is retired and skipped. Returns True if the
    record skipped every window (it may then be late data).
    """
    backend, state, trigger_context = operator.backend, operator.window_state, operator.trigger_context
    merging_set = MergingWindowSet(operator.assigner, operator.merging_sets)

    def merge(merge_result: Any, merged_windows: list, state_window: Any, merged_state_windows: list) -> None:
        _merge_windows(operator, key, merge_result, merged_windows, state_window, merged_state_windows)

    skipped = True
    for window in windows:
        actual = merging_set.add_window(window, merge)
        if operator.is_event_time and operator.cleanup_time(actual) <= operator.current_watermark:
            merging_set.retire_window(actual)
            continue
        skipped = False
        state_window = merging_set.get_state_window(actual)
        if state_window is None:
            raise RuntimeError(f"window {window!r} is not in the in-flight window set {merging_set!r}")
        backend.current_namespace = state_window
        state.add(value)
        trigger_context.key = key
        trigger_context.window = actual
        result = trigger_context.on_element(value, timestamp)
        if result is not TriggerResult.CONTINUE:
            if result.is_fire():
                backend.current_namespace = state_window
                contents = state.get()
                if contents is None or (not contents and operator.window_state_kind == "list"):
                    continue
                operator.emit_window_contents(key, actual, contents)
            if result.is_purge():
                backend.current_namespace = state_window
                state.clear()
        operator.register_cleanup_timer(actual)
    merging_set.persist()
    return skipped


def _merge_windows(operator: "WindowOperator", key: Any, merge_result: Any, merged_windows: list,
                   state_window: Any, merged_state_windows: list) -> None:
    """Flink's MergeFunction: tell the trigger, drop the merged panes' trigger state and timers, merge contents."""
    if operator.is_event_time and operator.cleanup_time(merge_result) <= operator.current_watermark:
        raise InvalidProgramError(
            f"The end timestamp of an event-time window cannot become earlier than the current watermark by "
            f"merging. Current watermark: {operator.current_watermark} window: {merge_result!r}")
    if not operator.is_event_time:
        now = operator.context.processing_time.current_processing_time()
        if merge_result.max_timestamp() <= now:
            raise InvalidProgramError(
                f"The end timestamp of a processing-time window cannot become earlier than the current "
                f"processing time by merging. Current processing time: {now} window: {merge_result!r}")
    trigger_context = operator.trigger_context
    trigger_context.key = key
    trigger_context.window = merge_result
    trigger_context.on_merge(merged_windows)
    for merged in merged_windows:
        trigger_context.window = merged
        trigger_context.clear()
        operator.delete_cleanup_timer(merged)
    if merged_state_windows:
        operator.backend.merge_namespaces(operator.window_descriptor, state_window, merged_state_windows)
