"""The metric reporters of one process and the components whose metrics they report (Flink's MetricRegistry).

A process (the kernel's MiniCluster, a JobManager process, a TaskManager process) makes one
:class:`MetricRegistry` from its configuration (:func:`~.reporter_setup.reporter_setups` checks
every key first), adds a *source* per component (a callable giving that component's metric groups
now: :data:`~.groups.MetricSource`), starts it, and closes it when the process's component stops.
Without a configured reporter it starts nothing and costs nothing.

    >>> registry = MetricRegistry.from_configuration({})   # no reporter configured
    >>> registry.add_source(lambda: [])
    >>> registry.start().reporters
    []
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from streamkernel.runtime.metrics.groups import MetricGroupSnapshot, MetricSource
from streamkernel.runtime.metrics.reporter_setup import ReporterSetup, reporter_setups

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.runtime.metrics.prometheus import PrometheusReporter

__all__ = ["MetricRegistry"]

_LOG = logging.getLogger(__name__)


class MetricRegistry:
    """The reporters of ``setups`` (bound to ``bind_address``) and the sources they read."""

    def __init__(self, setups: Sequence[ReporterSetup], bind_address: str = "127.0.0.1") -> None:
        self.setups = tuple(setups)
        self._bind_address = bind_address
        # The lock guards _sources and _reporters: sources are added while scrapes read them.
        self._lock = threading.Lock()
        self._sources: list[MetricSource] = []
        self._reporters: list["PrometheusReporter"] = []

    @staticmethod
    def from_configuration(configuration: Mapping[str, Any], bind_address: str = "127.0.0.1") -> "MetricRegistry":
        """The registry of the reporters ``configuration`` configures (IllegalConfigurationError names a wrong key)."""
        return MetricRegistry(reporter_setups(configuration), bind_address)

    def add_source(self, source: MetricSource) -> None:
        """Report the groups ``source()`` gives from now on."""
        with self._lock:
            self._sources.append(source)

    def groups(self) -> list[MetricGroupSnapshot]:
        """Every source's groups now (a source that raises, e.g. its component stopping meanwhile, is left
        out of this report and logged)."""
        with self._lock:
            sources = list(self._sources)
        found: list[MetricGroupSnapshot] = []
        for source in sources:
            try:
                found.extend(source())
            except Exception:  # noqa: BLE001 - one component's trouble must not cost the others' metrics
                _LOG.debug("metric source %r failed; left out of this report", source, exc_info=True)
        return found

    def start(self) -> "MetricRegistry":
        """Start every reporter (each binds its port); on a failure the started ones are closed and the
        error (naming the key) raised. Returns self."""
        if not self.setups:
            return self
        from streamkernel.runtime.metrics.prometheus import PrometheusReporter  # lazy: an HTTP server

        try:
            for setup in self.setups:
                reporter = PrometheusReporter(setup, self.groups, self._bind_address).open()
                with self._lock:
                    self._reporters.append(reporter)
        except BaseException:
            self.close()
            raise
        return self

    @property
    def reporters(self) -> list["PrometheusReporter"]:
        """The running reporters."""
        with self._lock:
            return list(self._reporters)

    def reporter(self, name: str) -> Optional["PrometheusReporter"]:
        """The running reporter ``name`` (``metrics.reporter.<name>.*``), or None."""
        return next((r for r in self.reporters if r.setup.name == name), None)

    def close(self) -> None:
        """Stop every reporter (ports freed, threads joined)."""
        with self._lock:
            reporters, self._reporters = self._reporters, []
        for reporter in reporters:
            reporter.close()

    def __repr__(self) -> str:
        return f"MetricRegistry({[repr(r) for r in self.reporters]})"
