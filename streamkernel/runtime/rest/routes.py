"""The REST API's routing table: every handler module's ``ROUTES``, each at ``/X`` and ``/v1/X``.

Handler modules are listed in :data:`ROUTE_MODULES`; each exports ``ROUTES`` (Flink path
templates such as ``/jobs/:jobid`` with a handler class) and may export ``RAW_ROUTES``
(tornado rules, or functions of the :class:`RestContext` returning one, added after the
API as they are: static files). Two modules may serve the
same template with different methods (one ``get``, another ``patch``): their handlers are
merged into one class, and a method both define is an error at startup.
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Iterable, Sequence

from streamkernel.runtime.rest.handlers.base import RestHandler

__all__ = ["ROUTE_MODULES", "template_pattern", "collect_routes", "tornado_rules", "large_body_routes"]

#: The modules whose ROUTES the endpoint serves, in order.
ROUTE_MODULES: tuple[str, ...] = (
    "streamkernel.runtime.rest.handlers.cluster",
    "streamkernel.runtime.rest.handlers.jobs",
    "streamkernel.runtime.rest.handlers.vertices",
    "streamkernel.runtime.rest.handlers.checkpoints",
    "streamkernel.runtime.rest.handlers.taskmanagers",
    "streamkernel.runtime.rest.handlers.logs",
    "streamkernel.runtime.rest.handlers.applications",
    "streamkernel.runtime.rest.handlers.job_actions",
    "streamkernel.runtime.rest.handlers.shutdown",
    "streamkernel.runtime.rest.handlers.submission",
    "streamkernel.runtime.rest.handlers.coordination",
    "streamkernel.runtime.rest.handlers.dashboard",  # its catch-all RAW_ROUTES after every API route
)

_METHODS = ("get", "head", "post", "delete", "patch", "put", "options")
_PARAMETER = re.compile(r":([A-Za-z_][A-Za-z0-9_]*)")


def template_pattern(template: str) -> str:
    """The tornado pattern of a Flink template, with and without the ``/v1`` prefix.

        >>> template_pattern("/jobs/:jobid")
        '(?:/v1)?/jobs/(?P<jobid>[^/]+)/?$'
    """
    if not template.startswith("/"):
        raise ValueError(f"a REST path template starts with '/', got {template!r}")
    return "(?:/v1)?" + _PARAMETER.sub(lambda m: f"(?P<{m.group(1)}>[^/]+)", template.rstrip("/")) + "/?$"


def collect_routes(modules: Iterable[str] = ROUTE_MODULES) -> tuple[list[tuple[str, type]], list[Any]]:
    """(template, handler class) of every module, one class per template (merged when several
    modules serve it), in first-seen order; and the modules' RAW_ROUTES."""
    by_template: dict[str, list[type]] = {}
    raw: list[Any] = []
    for name in modules:
        module = importlib.import_module(name)
        for template, handler in getattr(module, "ROUTES", ()):
            by_template.setdefault(template, []).append(handler)
        raw.extend(getattr(module, "RAW_ROUTES", ()))
    return [(template, _merged(template, handlers)) for template, handlers in by_template.items()], raw


def _merged(template: str, handlers: Sequence[type]) -> type:
    if len(handlers) == 1:
        return handlers[0]
    seen: dict[str, type] = {}
    for handler in handlers:
        for method in _METHODS:
            if method in vars(handler):
                if method in seen:
                    raise ValueError(f"REST path {template}: {seen[method].__name__} and {handler.__name__} "
                                     f"both handle {method.upper()}")
                seen[method] = handler
    return type("Merged" + "".join(h.__name__ for h in handlers), tuple(handlers), {
        "__doc__": f"{template}: " + ", ".join(f"{m.upper()} by {h.__name__}" for m, h in seen.items()),
        # whether a GET's answer may be reused is the GET handler's say, not another method's
        "CACHEABLE": getattr(seen.get("get"), "CACHEABLE", True),
        # and how large a body may be, each method's handler's
        "LARGE_BODY_METHODS": frozenset(m.upper() for m, h in seen.items()
                                        if m.upper() in getattr(h, "LARGE_BODY_METHODS", ()))})


def large_body_routes(modules: Iterable[str] = ROUTE_MODULES) -> list[tuple[str, str]]:
    """(method, tornado pattern) of every request whose body may be as large as
    ``rest.server.max-content-length`` (a handler's ``LARGE_BODY_METHODS``): what the front
    process streams to the JobManager instead of refusing past :data:`~.request_limits.MAX_JSON_BODY`.

        >>> large_body_routes()
        [('POST', '(?:/v1)?/jobs/?$')]
    """
    routes, _ = collect_routes(modules)
    return [(method, template_pattern(template)) for template, handler in routes
            for method in sorted(getattr(handler, "LARGE_BODY_METHODS", ()))]


def tornado_rules(context: Any, max_content_length: int, modules: Iterable[str] = ROUTE_MODULES) -> list[Any]:
    """tornado's rules for the API: every template's pattern with its handler and arguments.

    More specific templates come first, so ``/jobs/overview`` is not taken for ``/jobs/:jobid``.
    """
    routes, raw = collect_routes(modules)
    arguments = {"context": context, "max_content_length": max_content_length}
    # literal segments before parameters: sort by (segments with a parameter) so fixed names win
    ordered = sorted(routes, key=lambda item: [seg.startswith(":") for seg in item[0].split("/")])
    rules: list[Any] = [(template_pattern(t), h, arguments) for t, h in ordered]
    for rule in raw:
        rules.append(rule(context) if callable(rule) else rule)
    for _, handler in routes:
        if not issubclass(handler, RestHandler):
            raise TypeError(f"REST handler {handler.__name__} does not derive from RestHandler")
    return rules
