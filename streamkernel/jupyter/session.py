"""The notebook's dataflow: the environment bound to ``env`` and what each cell added to it."""

from __future__ import annotations

from typing import Any, Optional

from streamkernel.common.configuration import Configuration
from streamkernel.datastream.stream_execution_environment import StreamExecutionEnvironment

__all__ = ["NotebookSession", "ENV_NAME"]

ENV_NAME = "env"


class NotebookSession:
    """Owns the notebook's StreamExecutionEnvironment and its job name.

    The environment is bound to ``env`` in the user's namespace. If a cell rebinds ``env``
    to another StreamExecutionEnvironment (as a pasted PyFlink program does with
    ``env = StreamExecutionEnvironment.get_execution_environment()``), the session follows
    it: that environment becomes the notebook's dataflow.
    """

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self._env = StreamExecutionEnvironment.get_execution_environment()

    @property
    def env(self) -> StreamExecutionEnvironment:
        """The current dataflow's environment (following a user rebinding of ``env``)."""
        bound = self.shell.user_ns.get(ENV_NAME)
        if isinstance(bound, StreamExecutionEnvironment) and bound is not self._env:
            self._env = bound
        return self._env

    def bind(self) -> None:
        """Put the environment into the user's namespace as ``env`` and the API names users expect."""
        self.shell.push({ENV_NAME: self._env, "StreamExecutionEnvironment": StreamExecutionEnvironment})

    def reset(self, job_name: Optional[str] = None) -> StreamExecutionEnvironment:
        """Start a new, empty dataflow and bind it to ``env``."""
        self._env = StreamExecutionEnvironment.get_execution_environment()
        self.bind()
        if job_name:
            self.set_job_name(job_name)
        return self._env

    def set_job_name(self, job_name: str) -> None:
        """Name the dataflow: Flink's ``pipeline.name``, used by every graph and by execute()."""
        self.env.configure(Configuration.from_dict({"pipeline.name": job_name}))

    def job_name(self) -> Optional[str]:
        """The dataflow's name (``pipeline.name``), or None for Flink's default."""
        return self.env.to_configuration_dict().get("pipeline.name")

    def node_ids(self) -> frozenset[int]:
        """Ids of the operators (physical transformations) in the current dataflow."""
        return frozenset(t.id for t in self.env.transformations if t.is_physical)
