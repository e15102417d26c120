"""Options of the high-availability services: Flink's ``HighAvailabilityOptions``, and their check.

``high-availability.type`` chooses the services (``NONE``: one JobManager, nothing survives
it; ``zookeeper``: leader election and job metadata in ZooKeeper, job graphs in
``high-availability.storageDir``). :func:`check_high_availability_options` is what a JobManager
calls before it starts anything: a ZooKeeper setup without a quorum or a storage directory, or
with a storage directory that cannot be created or written, fails at once naming the key.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from streamkernel.common.config_options import ConfigOptions
from streamkernel.common.time import Duration
from streamkernel.errors import IllegalConfigurationError

__all__ = ["HighAvailabilityOptions", "check_high_availability_options", "is_zookeeper"]

_key = ConfigOptions.key
_HA = "high-availability."
_ZK = "high-availability.zookeeper."


class HighAvailabilityOptions:
    """Flink's ``HighAvailabilityOptions`` (the ZooKeeper ones)."""

    HA_MODE = _key(_HA + "type").enum_type(("NONE", "ZOOKEEPER")).default_value("NONE") \
        .with_deprecated_keys("high-availability").with_description(
            "The high-availability services: NONE (one JobManager; its loss loses the running jobs) or "
            "zookeeper (JobManagers elect a leader through ZooKeeper; job graphs, checkpoint ids and completed "
            "checkpoint pointers survive the leader).")
    HA_CLUSTER_ID = _key(_HA + "cluster-id").string_type().default_value("/default").with_description(
        "The cluster's id: its ZooKeeper nodes live under <path.root>/<cluster-id>/, its files under "
        "<storageDir>/<cluster-id>/. Clusters sharing a ZooKeeper need different ids.")
    HA_STORAGE_PATH = _key(_HA + "storageDir").string_type().no_default_value().with_description(
        "Directory (path or URL every JobManager can reach) for the job graphs and the job result store; "
        "ZooKeeper holds pointers to them. Required with high-availability.type zookeeper.")
    HA_ZOOKEEPER_QUORUM = _key(_ZK + "quorum").string_type().no_default_value().with_description(
        "The ZooKeeper quorum: host:port[,host:port...]. Required with high-availability.type zookeeper.")
    HA_ZOOKEEPER_ROOT = _key(_ZK + "path.root").string_type().default_value("/flink").with_description(
        "The root ZooKeeper node under which clusters keep their nodes.")
    ZOOKEEPER_SESSION_TIMEOUT = _key(_ZK + "client.session-timeout").duration_type() \
        .default_value(Duration.of_seconds(60)).with_range(1).with_description(
            "ZooKeeper session timeout: a leader whose ZooKeeper connection is gone this long loses its session "
            "(and another JobManager may then be elected). It loses leadership earlier: when its connection is "
            "suspended.")
    ZOOKEEPER_CONNECTION_TIMEOUT = _key(_ZK + "client.connection-timeout").duration_type() \
        .default_value(Duration.of_seconds(15)).with_range(1).with_description(
            "How long connecting to the quorum may take at start before it fails.")
    ZOOKEEPER_RETRY_WAIT = _key(_ZK + "client.retry-wait").duration_type() \
        .default_value(Duration.of_seconds(5)).with_range(1).with_description(
            "Pause between two attempts of a failed ZooKeeper operation (doubled after each attempt).")
    ZOOKEEPER_MAX_RETRY_ATTEMPTS = _key(_ZK + "client.max-retry-attempts").int_type().default_value(3) \
        .with_range(0).with_description("How often a failed ZooKeeper operation is retried before it fails.")


def is_zookeeper(configuration: Mapping[str, Any]) -> bool:
    """Whether ``configuration`` selects the ZooKeeper high-availability services."""
    return str(HighAvailabilityOptions.HA_MODE.get(configuration)).upper() == "ZOOKEEPER"


def check_high_availability_options(configuration: Mapping[str, Any]) -> None:
    """Fail at once, naming the key, on a high-availability setup that cannot work.

    Every declared key is parsed; with ``zookeeper`` the quorum and the storage directory must
    be set, the storage directory must be creatable and writable (a probe file is written to
    it and removed), and ``cluster-id`` and ``path.root`` must be ZooKeeper-usable paths.

        >>> check_high_availability_options({"high-availability.type": "zookeeper", "high-availability.storageDir": "/x"})
        Traceback (most recent call last):
        ...
        streamkernel.errors.IllegalConfigurationError: high-availability.type zookeeper needs
        'high-availability.zookeeper.quorum' (host:port[,host:port...]); it is not set
    """
    options = HighAvailabilityOptions
    for option in (options.HA_MODE, options.HA_CLUSTER_ID, options.HA_ZOOKEEPER_ROOT,
                   options.ZOOKEEPER_SESSION_TIMEOUT, options.ZOOKEEPER_CONNECTION_TIMEOUT,
                   options.ZOOKEEPER_RETRY_WAIT, options.ZOOKEEPER_MAX_RETRY_ATTEMPTS):
        option.get(configuration)
    if not is_zookeeper(configuration):
        return
    quorum = options.HA_ZOOKEEPER_QUORUM.get(configuration, None)
    if not quorum or not str(quorum).strip():
        raise IllegalConfigurationError(
            f"high-availability.type zookeeper needs '{options.HA_ZOOKEEPER_QUORUM.key()}' "
            "(host:port[,host:port...]); it is not set")
    for part in str(quorum).split(","):
        host, _, port = part.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise IllegalConfigurationError(
                f"Invalid value {quorum!r} for key '{options.HA_ZOOKEEPER_QUORUM.key()}': expected host:port"
                f"[,host:port...], got {part.strip()!r}")
    for option in (options.HA_ZOOKEEPER_ROOT, options.HA_CLUSTER_ID):
        value = str(option.get(configuration))
        if not value.strip("/") or any(p in ("", ".", "..") for p in value.strip("/").split("/")):
            raise IllegalConfigurationError(
                f"Invalid value {value!r} for key '{option.key()}': expected a ZooKeeper path such as '/flink' "
                "(no empty, '.' or '..' parts)")
    storage = options.HA_STORAGE_PATH.get(configuration, None)
    key = options.HA_STORAGE_PATH.source_key(configuration)
    if not storage or not str(storage).strip():
        raise IllegalConfigurationError(
            f"high-availability.type zookeeper needs '{options.HA_STORAGE_PATH.key()}' (a directory every "
            "JobManager can reach, for the job graphs); it is not set")
    check_storage_dir(str(storage), key)


def check_storage_dir(storage: str, key: str) -> None:
    """Create ``storage`` if needed and write and remove a probe file in it; an
    :class:`IllegalConfigurationError` names ``key``, the directory and the cause otherwise."""
    from streamkernel.runtime.checkpoint import filesystem as fs  # lazily: common sits below the runtime

    location = fs.check_location(storage, key)
    probe = fs.join(location, f".streamkernel-probe-{uuid.uuid4().hex}")
    try:
        fs.makedirs(location)
        fs.write_bytes(probe, b"probe")
        fs.remove(probe)
    except OSError as error:
        raise IllegalConfigurationError(
            f"Invalid value {storage!r} for key '{key}': the high-availability storage directory cannot be "
            f"created or written ({type(error).__name__}: {error.strerror or error})") from None
