"""``%flink connect HOST:PORT [--secret-file FILE]`` and ``%flink disconnect``: the notebook as a
client of a running session cluster.

``%flink connect zookeeper://HOST:PORT[,...]/CLUSTER-ID [-D high-availability.storageDir=DIR]``
connects to the current leader of a highly available cluster and keeps following it through
ZooKeeper: after a takeover the magics, the cockpit, ``cluster.rest_url`` and new submissions
use the new leader without reconnecting; while no JobManager leads, a read says so in one line.
The secret: ``--secret-file``, else the storage directory's (``-D high-availability.storageDir``),
else the one registered on this machine for the leader's address.

While connected, the notebook's cluster is a :class:`~streamkernel.runtime.rest.remote_cluster.RemoteCluster`:
the magics that read or control a cluster (jobs, cancel, savepoint, checkpoints, metrics,
slots, dashboard ...) use it exactly as they use the in-kernel MiniCluster, and every
environment of the kernel submits to it (``execution.target: remote``, ``rest.address``,
``rest.port``: the notebook's ``env`` is configured with them, and environments created while
connected get them from the context configuration, ``$STREAMKERNEL_CONFIGURATION``), as
``flink run -m`` configures a program. The secret checked at connect time (from
``--secret-file``, else found from the address) signs every submission while connected: the
kernel holds it as ``$STREAMKERNEL_CLUSTER_SECRET``, as TaskManager processes receive theirs.
Disconnecting undoes all of that; the cluster and its jobs keep running, and a later
``connect`` (from this or another notebook) finds them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Optional

from IPython.core.error import UsageError

from streamkernel.errors import StreamKernelError

__all__ = ["ConnectCommands", "REMOTE_KEYS", "REMOTE_REFUSED"]

#: The configuration keys that send an environment's jobs to the connected cluster.
REMOTE_KEYS = ("execution.target", "rest.address", "rest.port")

#: Subcommands that need the cluster's own process (its TaskManagers, its tasks' records): why, per command.
REMOTE_REFUSED = {
    "stop": "the cluster is not this kernel's to stop; %flink disconnect leaves it running "
            "(stop it where it was started, e.g. streamkernel cluster stop)",
    "kill-taskmanager": "the TaskManager processes belong to the cluster, not to this kernel",
    "fail": "failure injection reaches into the cluster's tasks, which run outside this kernel",
    "peek": "peeking reads records inside the cluster's tasks, which run outside this kernel",
    "state": "reading keyed state needs the job's graph, which stays on the cluster",
    "results": "a collect or pandas sink's records stay in the cluster's process",
}


class ConnectCommands:
    """Holds the notebook's connection (None: not connected) for the :class:`ClusterCommands`."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.remote: Optional[Any] = None
        self.address = ""  # what %flink connect was given
        self._saved_environ: dict[str, Optional[str]] = {}
        self._saved_env_keys: dict[str, Optional[str]] = {}

    def connect(self, args: argparse.Namespace) -> Any:
        """``%flink connect HOST:PORT [--secret-file FILE]`` (or ``zookeeper://HOST:PORT/CLUSTER-ID
        [-D high-availability.storageDir=...]``, following the leader): check the cluster, then use it."""
        from streamkernel.runtime.minicluster.minicluster import current_cluster
        from streamkernel.runtime.rest.cluster_secret import SECRET_ENV, SECRET_FILE_ENV
        from streamkernel.runtime.rest.remote_cluster import RemoteCluster

        if self.remote is not None:
            raise UsageError(f"%flink connect: already connected to {self.remote.rest_url}; %flink disconnect first")
        running = current_cluster()
        if running is not None and running.is_running:
            raise UsageError(f"%flink connect: a cluster runs in this kernel ({running!r}); %flink stop it first")
        from streamkernel.runtime.highavailability.zookeeper_url import is_zookeeper_url

        secret_file = os.path.expanduser(args.secret_file) if args.secret_file else None
        dynamic = _dynamic(getattr(args, "dynamic", None) or [])
        ha = is_zookeeper_url(args.address)
        if dynamic and not ha:
            raise UsageError("%flink connect: -D KEY=VALUE is for a zookeeper://HOST:PORT/CLUSTER-ID address "
                             "(e.g. -D high-availability.storageDir=...)")
        try:
            remote = RemoteCluster.connect_ha(args.address, secret_file, dynamic) if ha else \
                RemoteCluster.connect(args.address, secret_file)
        except (StreamKernelError, ValueError) as exc:
            raise UsageError(f"%flink connect: {exc}") from None
        try:
            jobs = remote.jobs()
        except (StreamKernelError, ValueError) as exc:
            remote.disconnect()
            raise UsageError(f"%flink connect: {exc}") from None
        # connected: from here on nothing can fail half-way
        from streamkernel.datastream.env_settings import CONTEXT_CONFIGURATION_ENV, context_configuration

        remote_keys = {"execution.target": "remote", "rest.address": remote.host, "rest.port": str(remote.port)}
        names = (CONTEXT_CONFIGURATION_ENV, SECRET_FILE_ENV, SECRET_ENV)
        self._saved_environ = {name: os.environ.get(name) for name in names}
        os.environ[CONTEXT_CONFIGURATION_ENV] = json.dumps({**context_configuration(), **remote_keys})
        # the secret checked now signs every submission (the file it came from may go, or change)
        os.environ.pop(SECRET_FILE_ENV, None)
        os.environ[SECRET_ENV] = remote.client.secret().hex()
        env = self.session.env
        current = env.to_configuration_dict()
        self._saved_env_keys = {key: current.get(key) for key in REMOTE_KEYS}
        self._configure(env, remote_keys)
        self.remote = remote
        self.address = args.address
        from streamkernel.runtime.rest.leader_client import LeaderRestClient

        if isinstance(remote.client, LeaderRestClient):  # submissions follow the leader too
            remote.client.listeners.append(self._follow_leader)
            self._follow_leader(remote.client)  # a takeover while connecting
        self.session.shell.push({"cluster": remote})
        running_jobs = sum(1 for j in jobs if not j.status.is_globally_terminal_state())
        leader = f"the leading JobManager of {args.address} (at {remote.rest_url}, followed through ZooKeeper)" \
            if ha else f"the cluster at {remote.rest_url}"
        print(f"Connected to {leader} ({len(jobs)} job(s), {running_jobs} running); bound to "
              f"`cluster`. Every env.execute() in this kernel now submits there; %flink disconnect leaves it running.")
        return remote

    def _follow_leader(self, client: Any) -> None:
        """A new leader (the retrieval thread): the kernel's environments submit to it from now on."""
        from streamkernel.datastream.env_settings import CONTEXT_CONFIGURATION_ENV, context_configuration
        from streamkernel.runtime.rest.cluster_secret import SECRET_ENV, SecretError

        if self.remote is None or self.remote.client is not client:
            return
        keys = {"execution.target": "remote", "rest.address": client.host, "rest.port": str(client.port)}
        os.environ[CONTEXT_CONFIGURATION_ENV] = json.dumps({**context_configuration(), **keys})
        try:
            os.environ[SECRET_ENV] = client.secret().hex()
        except SecretError:
            pass  # the next submission names where it looked
        self._configure(self.session.env, keys)

    def disconnect(self, args: argparse.Namespace) -> None:
        """``%flink disconnect``: stop using the remote cluster; it and its jobs keep running."""
        remote = self.remote
        if remote is None:
            raise UsageError("%flink disconnect: not connected to a cluster; %flink connect HOST:PORT first")
        for name, value in self._saved_environ.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._restore_env_keys(self.session.env)
        self.remote = None
        remote.disconnect()
        if "streamkernel.jupyter.widgets.refresher" in sys.modules:  # the live views stop asking the cluster
            from streamkernel.jupyter.widgets.refresher import refresher_for

            refresher_for(remote).stop()
        if self.session.shell.user_ns.get("cluster") is remote:
            self.session.shell.user_ns.pop("cluster")
        back = self.address if remote.ha_services is not None else f"{remote.host}:{remote.port}"
        print(f"Disconnected from {remote.rest_url}; the cluster and its jobs keep running "
              f"(%flink connect {back} to come back).")

    def refuse(self, command: str) -> None:
        """A one-line UsageError when ``command`` cannot work against the connected cluster."""
        if self.remote is not None and command in REMOTE_REFUSED:
            raise UsageError(f"%flink {command}: not available on the remote cluster at {self.remote.rest_url}: "
                             f"{REMOTE_REFUSED[command]}")

    @staticmethod
    def _configure(env: Any, keys: dict[str, str]) -> None:
        from streamkernel.common.configuration import Configuration

        env.configure(Configuration.from_dict(keys))

    def _restore_env_keys(self, env: Any) -> None:
        """Give the notebook's environment back the values it had before connecting (absent: removed)."""
        kept = {key: value for key, value in self._saved_env_keys.items() if value is not None}
        for key in REMOTE_KEYS:
            if key not in kept:
                # EnvSettings has no public way to drop a key; an empty rest.port would still count as set
                env._configuration.remove_config(key)
        if kept:
            self._configure(env, kept)


def _dynamic(entries: list[str]) -> dict[str, str]:
    """``-D KEY=VALUE`` options of ``%flink connect`` as a dict (UsageError for a malformed one)."""
    from streamkernel.jupyter.cluster_commands import dynamic_configuration  # lazily: it imports this module

    return dynamic_configuration(entries, "connect")
