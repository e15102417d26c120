"""Flink's own Web UI at ``/``: the dashboard's files, after every API route (API paths win).

:data:`RAW_ROUTES` holds one catch-all rule, built per endpoint from its configuration: with
Flink's ``flink-dist-*.jar`` (:func:`~streamkernel.runtime.rest.web_ui.find_dashboard`) it
answers ``/`` with ``index.html`` and any other path with that file of the jar's ``web/``
(the cache headers :class:`~streamkernel.runtime.rest.web_ui.DashboardFiles` returns; a
request whose ``If-None-Match`` is the file's ETag gets 304); without it, ``/`` is the page saying
how to get it, with the API's paths. A path the jar lacks, or one refused as unsafe, is
Flink's 404 ``{"errors": ["Not found: /x"]}``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Optional

from streamkernel.common.options import RestOptions
from streamkernel.runtime.rest.context import RestContext
from streamkernel.runtime.rest.handlers.base import RestError, RestHandler
from streamkernel.runtime.rest.web_ui import DashboardFiles, fallback_page, find_dashboard

__all__ = ["DashboardHandler", "dashboard_rule", "api_paths", "RAW_ROUTES"]


@functools.lru_cache(maxsize=4)
def _files_of(jar: Path) -> DashboardFiles:
    """One DashboardFiles per jar for the process: the dashboard's files are static, and every
    cluster of the kernel serves the same ones (read once, kept open as an import is)."""
    return DashboardFiles(jar)


def api_paths() -> list[str]:
    """The Flink path templates the endpoint serves, as registered (``/config``, ``/jobs/:jobid`` ...)."""
    from streamkernel.runtime.rest.routes import collect_routes  # routes imports this module

    routes, _ = collect_routes()
    return [template for template, _ in routes]


class DashboardHandler(RestHandler):
    """``GET /`` and ``GET /<file>``: a file of Flink's Web UI, else the fallback page at ``/``."""

    def initialize(self, context: RestContext, max_content_length: int,
                   files: Optional[DashboardFiles] = None, paths: tuple[str, ...] = ()) -> None:
        """The context, the body limit, the dashboard's files (None: no jar) and the API's paths."""
        super().initialize(context, max_content_length)
        self.files = files
        self.paths = paths

    def get(self, path: str) -> None:
        """The file's bytes with its Content-Type, Cache-Control and ETag; 404 when there is none."""
        if self.files is None:
            if path in ("", "index.html"):
                self.set_header("Content-Type", "text/html; charset=utf-8")
                self.set_header("Cache-Control", "no-cache")
                self.finish(fallback_page(self.paths))
                return
            raise RestError(404, f"Not found: {self.request.path}")
        found = self.files.get(self.request.path)
        if found is None:
            raise RestError(404, f"Not found: {self.request.path}")
        for name, value in found.headers.items():
            self.set_header(name, value)
        if self.check_etag_header():  # If-None-Match names this ETag: the browser has the file
            self.set_status(304)
            self.finish()
            return
        self.finish(found.body)

    def head(self, path: str) -> None:
        """As GET, without the body (tornado sends none for HEAD)."""
        self.get(path)


def dashboard_rule(context: RestContext) -> tuple[str, type, dict[str, Any]]:
    """The catch-all tornado rule for the endpoint of ``context``; raises
    IllegalConfigurationError when ``web.dashboard.jar`` names no file."""
    jar = find_dashboard(context.configuration)
    files = _files_of(jar.resolve()) if jar is not None else None
    arguments = {"context": context, "max_content_length": RestOptions.SERVER_MAX_CONTENT_LENGTH.get(context.configuration),
                 "files": files, "paths": tuple(api_paths())}
    return r"/(.*)", DashboardHandler, arguments


RAW_ROUTES = [dashboard_rule]
