"""The one background thread per cluster that redraws the cockpit's live views.

A :class:`Refresher` takes a :meth:`MiniCluster.inspection.snapshot` a few times a second (it reads
published state and counters; it never stops a task), feeds one shared
:class:`~.history.MetricsHistory`, and hands the snapshot to every live view. Views say
when they are done (their job ended, the cluster stopped, the widget was closed); the
thread ends when no view is left, and starts again when one is added. Nothing in the data
path waits for it: a slow frontend only makes the views lag.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Optional, Protocol

from streamkernel.jupyter.widgets.history import MetricsHistory

__all__ = ["LiveView", "Refresher", "refresher_for", "DEFAULT_INTERVAL_S", "stop_all"]

_LOG = logging.getLogger(__name__)

#: Seconds between two snapshots (4 per second).
DEFAULT_INTERVAL_S = 0.25


class LiveView(Protocol):
    """What a refresher drives."""

    def refresh(self, snapshot: dict, history: MetricsHistory) -> None:
        """Redraw from ``snapshot`` (rates from ``history``, which already holds it)."""

    @property
    def done(self) -> bool:
        """True once the view needs no more snapshots."""


class Refresher:
    """Snapshots ``cluster`` every ``interval_s`` seconds for its views, from one daemon thread."""

    def __init__(self, cluster: Any, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        # Weak: the refresher map's key is the cluster, and a value holding its key would keep
        # every cluster ever shown alive. A collected cluster ends the refresher.
        self._cluster = weakref.ref(cluster)
        self.interval_s = interval_s
        self.history = MetricsHistory()
        self.snapshots_taken = 0
        #: refreshes that could not read the cluster (the thread went on; the views kept their picture)
        self.failed_refreshes = 0
        self._views: list[Any] = []
        self._lock = threading.Lock()
        self._refreshing = threading.Lock()  # one snapshot at a time feeds the shared history
        self._wake = threading.Event()
        self._stopped = False
        self._thread: Optional[threading.Thread] = None

    def add(self, view: Any) -> None:
        """Start refreshing ``view`` (and draw it once at once, from this thread)."""
        self.refresh_once([view])
        with self._lock:
            if view.done:
                return
            self._views.append(view)
            self._stopped = False
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="streamkernel-cockpit-refresher", daemon=True)
                self._thread.start()

    @property
    def cluster(self) -> Any:
        """The cluster refreshed (ReferenceError once it was stopped, dropped and collected)."""
        cluster = self._cluster()
        if cluster is None:
            raise ReferenceError("the cluster of this cockpit view was stopped and garbage-collected")
        return cluster

    @property
    def views(self) -> list[Any]:
        """The views still refreshed."""
        with self._lock:
            return list(self._views)

    @property
    def running(self) -> bool:
        """True while the thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def refresh_once(self, views: Optional[list[Any]] = None) -> dict:
        """Take one snapshot and redraw ``views`` (default: every live view); returns the snapshot.

        Called by the thread and by a button's action (a view redrawn at once): one at a time."""
        with self._refreshing:
            cluster = self._cluster()
            if cluster is None:  # collected: nothing left to show
                with self._lock:
                    self._stopped = True
                return {}
            snapshot = cluster.inspection.snapshot()
            del cluster  # the thread holds no strong reference between two snapshots
            self.snapshots_taken += 1
            self.history.add_snapshot(snapshot)
            for view in (self.views if views is None else views):
                try:
                    view.refresh(snapshot, self.history)
                except Exception:  # noqa: BLE001 - a view's bug must not stop the others
                    _LOG.exception("cockpit view %r failed to refresh", view)
            return snapshot

    def _run(self) -> None:
        while not self._wake.wait(self.interval_s):
            with self._lock:
                self._views = [v for v in self._views if not v.done]
                if not self._views or self._stopped or self._cluster() is None:
                    self._thread = None
                    return
            try:
                self.refresh_once()
            except Exception as error:  # noqa: BLE001 - a cluster unreachable for a moment (a JobManager
                # taking over, a connected cluster's REST API down): the views keep their last picture
                self.failed_refreshes += 1
                _LOG.debug("cockpit: the cluster could not be read (%s); trying again", error)
        self._wake.clear()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop refreshing (the views keep their last picture) and join the thread."""
        with self._lock:
            self._stopped = True
            thread = self._thread
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._wake.clear()


_refreshers: "weakref.WeakKeyDictionary[Any, Refresher]" = weakref.WeakKeyDictionary()
_refreshers_lock = threading.Lock()


def refresher_for(cluster: Any) -> Refresher:
    """The refresher of ``cluster`` (one per cluster, created on first use)."""
    with _refreshers_lock:
        refresher = _refreshers.get(cluster)
        if refresher is None:
            refresher = _refreshers[cluster] = Refresher(cluster)
        return refresher


def stop_all() -> None:
    """Stop every refresher (``%flink stop`` and tests: no thread is left behind)."""
    with _refreshers_lock:
        refreshers = list(_refreshers.values())
    for refresher in refreshers:
        refresher.stop()
