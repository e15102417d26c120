"""The secret of a highly available cluster: one file in ``high-availability.storageDir``.

Without high availability a standalone cluster's secret lives in its directory
(``DIR/cluster.secret``). With it, several JobManager processes (each with a directory of its
own), the TaskManagers that follow whichever leads and the clients must all use the same one,
so it lives where they all reach: ``<storageDir>/<cluster-id>/cluster.secret``, hex, mode 0600
on a local disk. The first JobManager creates it (exclusively: two starting at once agree on
the winner's); everyone else reads it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from streamkernel.runtime.checkpoint import filesystem as fs
from streamkernel.runtime.rpc.secret_file import SecretError, read_secret_file, secret_from_hex
from streamkernel.runtime.rpc.transport import new_cluster_secret

__all__ = ["ha_secret_path", "read_ha_secret", "read_or_create_ha_secret", "SECRET_FILE_NAME"]

SECRET_FILE_NAME = "cluster.secret"


def ha_secret_path(configuration: Mapping[str, Any]) -> str:
    """``<storageDir>/<cluster-id>/cluster.secret`` of ``configuration`` (a ZooKeeper HA configuration)."""
    from streamkernel.common.options.high_availability import HighAvailabilityOptions as options

    storage = options.HA_STORAGE_PATH.get(configuration, None)
    if not storage:
        raise SecretError(f"the cluster secret of a highly available cluster lives in "
                          f"'{options.HA_STORAGE_PATH.key()}', which is not set")
    cluster_id = str(options.HA_CLUSTER_ID.get(configuration)).strip("/")
    return fs.join(fs.normalize(str(storage)), *cluster_id.split("/"), SECRET_FILE_NAME)


def read_ha_secret(configuration: Mapping[str, Any]) -> bytes:
    """The cluster's secret (SecretError naming the file when it is missing: no JobManager of this cluster
    id has started yet, or the storage directory is another; or unreadable, a symbolic link, another
    user's or too open: :func:`~streamkernel.runtime.rpc.secret_file.read_secret_file`)."""
    path = ha_secret_path(configuration)
    if fs.is_local(path):
        local = fs.normalize(path)
        if not os.path.lexists(local):
            raise SecretError(f"no cluster secret at '{local}': no JobManager of this high-availability cluster "
                              f"has started (or high-availability.storageDir / cluster-id differ from its)")
        from pathlib import Path

        return read_secret_file(Path(local))
    try:
        text = fs.read_bytes(path).decode("ascii", errors="replace")
    except OSError as error:
        raise SecretError(f"cannot read the cluster secret '{path}': {error}") from None
    return secret_from_hex(text, f"the cluster secret file '{path}'")


def read_or_create_ha_secret(configuration: Mapping[str, Any]) -> bytes:
    """The cluster's secret, created (mode 0600, exclusively) if no JobManager made it before."""
    path = ha_secret_path(configuration)
    fs.makedirs(fs.dirname(path))
    if fs.is_local(path):
        local = fs.normalize(path)
        secret = new_cluster_secret()
        temporary = f"{local}.{os.getpid()}.tmp"
        if os.path.lexists(temporary):
            os.unlink(temporary)  # a leftover of a process with our pid that died
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, secret.hex().encode("ascii") + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temporary, local)  # atomic and exclusive: a reader never sees a half-written secret
        except FileExistsError:
            return read_ha_secret(configuration)
        finally:
            os.unlink(temporary)
        return secret
    if fs.exists(path):
        return read_ha_secret(configuration)
    secret = new_cluster_secret()
    fs.write_bytes(path, secret.hex().encode("ascii") + b"\n")
    return read_ha_secret(configuration)
