"""Options of the JobManager's REST endpoint: Flink's ``RestOptions``, and how its port is chosen."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from streamkernel.common.config_options import ConfigOptions
from streamkernel.common.time import Duration
from streamkernel.errors import IllegalConfigurationError

__all__ = ["RestOptions", "PORT_FALLBACK_COUNT", "rest_port_range", "rest_explicitly_configured",
           "check_rest_options"]

_key = ConfigOptions.key

#: How many ports from ``rest.port`` on are tried when ``rest.bind-port`` is unset (8081-8090).
PORT_FALLBACK_COUNT = 10


class RestOptions:
    """Flink's ``RestOptions``: where the JobManager serves its REST API and Web UI."""

    BIND_ADDRESS = _key("rest.bind-address").string_type().default_value("127.0.0.1").with_description(
        "Address the REST endpoint binds to (Flink's default binds every interface; streamkernel's, loopback "
        "only). A non-loopback address is allowed and logged as a warning: the API can cancel jobs.")
    PORT = _key("rest.port").int_type().default_value(8081).with_range(0, 65535).with_description(
        f"Port of the REST endpoint when rest.bind-port is unset. When it is taken, the next "
        f"{PORT_FALLBACK_COUNT - 1} ports are tried (8081-8090 by default; unless rest.port is set "
        f"explicitly, any free port after those); 0: any free port.")
    BIND_PORT = _key("rest.bind-port").string_type().no_default_value().with_description(
        "Port or port range the REST endpoint binds to: '8081', or '8081-8090' (the first free one); "
        "'0': any free port. Unset: rest.port.")
    ADDRESS = _key("rest.address").string_type().no_default_value().with_description(
        "Host name clients use to reach the REST endpoint (what cluster.rest_url shows); unset: rest.bind-address.")
    SERVER_MAX_CONTENT_LENGTH = _key("rest.server.max-content-length").int_type().default_value(104_857_600) \
        .with_range(1).with_description(
            "The maximum content length in bytes that the server will handle (Flink's description): a job "
            "submission's body may be this large; every other resource takes JSON of at most 1 MiB (or this, if "
            "lower). A larger body gets 413 before it is read, and nothing else happens.")
    ASYNC_OPERATION_STORE_DURATION = _key("rest.async.store-duration").duration_type() \
        .default_value(Duration.of_minutes(5)).with_description(
            "How long the result of a completed asynchronous operation (a savepoint, stop-with-savepoint or "
            "checkpoint triggered through the REST API) can still be asked for by its trigger id.")
    COLLECT_CLIENT_TIMEOUT = _key("collect-sink.client-timeout").duration_type() \
        .default_value(Duration.of_seconds(60)).with_description(
            "How long the JobManager holds the results of a remote execute_and_collect() whose client stopped "
            "fetching: after it, blocked collect sinks are released and further results dropped, so a job whose "
            "client went away still finishes (streamkernel's key).")
    FRONT_PROCESS = _key("streamkernel.rest.front-process").boolean_type().default_value(True).with_description(
        "Answer HTTP in a process of its own in front of the JobManager (streamkernel's: a browser or a curl "
        "loop then costs the JobManager's process, and tasks running in it, at most one request per resource "
        "and second); false: the JobManager's process answers every request itself.")


def rest_port_range(configuration: Mapping[str, Any]) -> range:
    """The ports the REST endpoint tries, in order (``range(0, 1)``: any free port).

    ``rest.bind-port`` (a port or ``first-last``) if set, else ``rest.port`` and the next
    :data:`PORT_FALLBACK_COUNT` - 1 ports. IllegalConfigurationError names the key of a bad value.

        >>> list(rest_port_range({"rest.bind-port": "9000-9002"})), rest_port_range({}).start
        ([9000, 9001, 9002], 8081)
    """
    text = configuration.get(RestOptions.BIND_PORT.key())
    if text is None:
        port = RestOptions.PORT.get(configuration)
        return range(0, 1) if port == 0 else range(port, min(port + PORT_FALLBACK_COUNT, 65536))
    value = str(text).strip()
    first, sep, last = value.partition("-")
    try:
        low, high = int(first.strip()), int(last.strip()) if sep else int(first.strip())
    except ValueError:
        low, high = -1, -1
    if not (0 <= low <= high <= 65535) or (low == 0 and high != 0):
        raise IllegalConfigurationError(
            f"Invalid value {text!r} for key '{RestOptions.BIND_PORT.key()}': expected a port (0-65535) or a "
            f"range 'first-last' of ports (1-65535, first <= last), e.g. '8081-8090'")
    return range(low, high + 1)


def rest_explicitly_configured(configuration: Mapping[str, Any]) -> bool:
    """True when the configuration sets ``rest.port`` or ``rest.bind-port``: the user asked for an
    endpoint (``env.execute()``'s transient cluster then serves one too)."""
    return RestOptions.PORT.is_set(configuration) or RestOptions.BIND_PORT.is_set(configuration)


def check_rest_options(configuration: Mapping[str, Any]) -> None:
    """Parse every REST key of ``configuration``: the first bad value raises
    IllegalConfigurationError naming its key (before a cluster starts anything)."""
    for option in (RestOptions.BIND_ADDRESS, RestOptions.PORT, RestOptions.ADDRESS,
                   RestOptions.SERVER_MAX_CONTENT_LENGTH, RestOptions.ASYNC_OPERATION_STORE_DURATION,
                   RestOptions.FRONT_PROCESS):
        option.get(configuration)
    rest_port_range(configuration)
