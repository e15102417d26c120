"""StreamExecutionEnvironment: the context a streaming program is built and executed in.

As in PyFlink, the environment holds the job-wide settings (parallelism, max parallelism,
checkpointing, state backend, restart strategy, buffer timeout, chaining) and the list of
transformations the DataStream API records. From that list it builds the three graphs
(:meth:`get_stream_graph`, :meth:`get_job_graph`, :meth:`get_execution_graph`) and Flink's
plan JSON (:meth:`get_execution_plan`); :meth:`execute` hands the StreamGraph to the
runtime.

Settings come from PyFlink 2.x configuration keys (a ``Configuration`` passed to
:meth:`get_execution_environment` or :meth:`configure`) or from the methods, 1.x ones
included (``set_restart_strategy``, ``set_state_backend``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional

from streamkernel.common.configuration import Configuration
from streamkernel.datastream.connectors.base import Source, SourceFunction
from streamkernel.datastream.connectors.collection import CollectionSource
from streamkernel.datastream.connectors.file_system import FileSource, StreamFormat
from streamkernel.datastream.env_settings import EnvSettings
from streamkernel.errors import InvalidProgramError
from streamkernel.graph.execution_graph import ExecutionGraph, build_execution_graph
from streamkernel.graph.job_graph import JobGraph, build_job_graph
from streamkernel.graph.plan_json import execution_plan_json
from streamkernel.graph.stream_graph import StreamGraph, build_stream_graph
from streamkernel.graph.operator_specs import SourceSpec
from streamkernel.graph.transformations import SourceTransformation, Transformation

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.datastream.data_stream import DataStream

__all__ = ["StreamExecutionEnvironment"]

DEFAULT_JOB_NAME = "Flink Streaming Job"


class StreamExecutionEnvironment(EnvSettings):
    """The context in which a streaming program is built and executed.

    >>> env = StreamExecutionEnvironment.get_execution_environment()
    >>> env.set_parallelism(2).get_parallelism()
    2
    """

    def __init__(self, configuration: Optional[Configuration] = None) -> None:
        super().__init__(configuration)
        self._transformations: list[Transformation] = []

    @staticmethod
    def get_execution_environment(configuration: Optional[Configuration] = None) -> "StreamExecutionEnvironment":
        """A new environment; ``configuration`` holds Flink configuration keys.

        Example: ``Configuration().set_string("restart-strategy.type", "fixed-delay")``.
        """
        return StreamExecutionEnvironment(configuration)

    # ------------------------------------------------------------------ sources
    def from_collection(self, collection: Iterable[Any], type_info: Any = None) -> "DataStream":
        """A bounded stream of the collection's elements, read by one subtask (parallelism 1).

        With a ``type_info`` the elements are what PyFlink's functions receive after the
        elements crossed to the JVM as that type and back: ``Types.ROW``/``ROW_NAMED`` turn
        tuples into Rows with field names (``f0``, ``f1``, ... or the given ones),
        ``Types.TUPLE`` turns lists into tuples.
        """
        if isinstance(collection, (str, bytes)) or not hasattr(collection, "__iter__"):
            raise InvalidProgramError(
                f"from_collection: collection must be an iterable of elements (a list, tuple, range ...), "
                f"got {type(collection).__name__}")
        source = None
        if type_info is not None:
            from streamkernel.common.typeinfo.conversion import passes_as_is

            elements = list(collection)
            if passes_as_is(type_info, elements):  # ints, strs, tuples of them ...: nothing to convert, ever
                source = CollectionSource(elements, produced_type=type_info)
            elif callable(getattr(type_info, "need_conversion", None)) and type_info.need_conversion():
                collection = [type_info.from_internal_type(type_info.to_internal_type(e)) for e in elements]
            else:
                collection = elements
        return self._add_source_transformation(source or CollectionSource(collection), "Collection Source",
                                               type_info, parallelism=1)

    def from_source(self, source: Source, watermark_strategy: Any, source_name: str,
                    type_info: Any = None) -> "DataStream":
        """A stream read from a new-style ``Source`` (e.g. NumberSequenceSource, FileSource)."""
        if not isinstance(source, Source):
            raise InvalidProgramError(
                f"from_source: source must be a Source (NumberSequenceSource, FileSource, "
                f"DataGeneratorSource ...), got {type(source).__name__}")
        if not isinstance(source_name, str) or not source_name:
            raise InvalidProgramError(f"from_source: source_name must be a non-empty str, got {source_name!r}")
        return self._add_source_transformation(source, source_name, type_info, watermark_strategy=watermark_strategy)

    def add_source(self, source_func: Any, source_name: str = "Custom Source", type_info: Any = None) -> "DataStream":
        """A stream read from a legacy ``SourceFunction`` (or any streamkernel Source)."""
        if not isinstance(source_func, Source):
            raise InvalidProgramError(
                f"add_source: source_func must be a SourceFunction or Source, got {type(source_func).__name__}")
        parallelism = 1 if isinstance(source_func, SourceFunction) and source_func.max_parallelism == 1 else None
        return self._add_source_transformation(source_func, source_name, type_info, parallelism=parallelism)

    def read_text_file(self, file_path: str, charset_name: str = "UTF-8") -> "DataStream":
        """The lines of a text file (or of the files in a directory), once (PyFlink 1.x API)."""
        source = FileSource.for_record_stream_format(StreamFormat.text_line_format(charset_name), file_path).build()
        return self._add_source_transformation(source, file_path, None)

    def socket_text_stream(self, hostname: str, port: int, delimiter: str = "\n",
                           max_retry: int = 0) -> "DataStream":
        """The text read from a TCP socket, split at ``delimiter`` (one subtask, as Flink's
        socketTextStream); ``max_retry`` reconnects after the server closed (-1: forever)."""
        from streamkernel.datastream.connectors.socket import SocketTextStreamSource

        source = SocketTextStreamSource(hostname, port, delimiter, max_retry)
        return self._add_source_transformation(source, "Socket Stream", None, parallelism=1)

    def create_input(self, input_format: Any, type_info: Any = None) -> "DataStream":
        """Not supported: Java InputFormats need a JVM; use from_source with a Source."""
        raise InvalidProgramError("create_input() takes a Java InputFormat, which streamkernel cannot run; "
                                  "use from_source() with a streamkernel Source instead")

    def _add_source_transformation(self, source: Source, name: str, type_info: Any, *,
                                   parallelism: Optional[int] = None, watermark_strategy: Any = None) -> "DataStream":
        from streamkernel.datastream.data_stream import DataStream

        produced_type = getattr(source, "get_produced_type", None)
        if type_info is None and callable(produced_type):
            type_info = produced_type()  # e.g. a FileSource's row type (Parquet, CSV)
        if parallelism is None:
            parallelism = self.get_parallelism()
            if source.max_parallelism is not None:
                parallelism = min(parallelism, source.max_parallelism)
        operator = SourceSpec(source=source, watermark_strategy=watermark_strategy)
        transformation = SourceTransformation(name, operator, parallelism, bounded=source.is_bounded,
                                              output_type=type_info)
        if source.max_parallelism == 1:
            transformation.max_parallelism = 1
        self._add(transformation)
        return DataStream(transformation, self)

    # ------------------------------------------------- contract with DataStream
    def _add(self, transformation: Transformation) -> None:
        """Record a transformation made by the DataStream API (physical or virtual)."""
        self._transformations.append(transformation)

    def _check_uid(self, uid: str, transformation: Transformation) -> None:
        """Raise if another operator of this environment already uses ``uid``."""
        for other in self._transformations:
            if other is not transformation and other.uid == uid:
                raise InvalidProgramError(
                    f'Hash collision on user-specified ID "{uid}". Most likely cause is a non-unique ID. '
                    f"uid {uid!r} is already used by operator {other.name!r}; every operator's uid must be "
                    f"unique within a job (it names the operator's state in checkpoints and savepoints)")

    @property
    def transformations(self) -> tuple[Transformation, ...]:
        """The transformations recorded so far, in creation order."""
        return tuple(self._transformations)

    def _clear_transformations(self) -> None:
        self._transformations.clear()

    # ------------------------------------------------------------------ graphs
    def get_stream_graph(self, job_name: Optional[str] = None, clear_transformations: bool = False) -> StreamGraph:
        """The StreamGraph of everything built so far (one node per operator)."""
        if not self._transformations:
            raise InvalidProgramError(
                "No operators defined in streaming topology. Cannot execute. Add a source "
                "(from_collection, from_source ...) and operators first.")
        configuration = self.to_configuration_dict()
        if configuration.get("execution.runtime-mode") == "AUTOMATIC":
            # Flink: BATCH when every source is bounded, else STREAMING.
            bounded = all(t.bounded for t in self._transformations if isinstance(t, SourceTransformation))
            configuration["execution.runtime-mode"] = "BATCH" if bounded else "STREAMING"
        elif configuration.get("execution.runtime-mode") == "BATCH":
            unbounded = [t.name for t in self._transformations if isinstance(t, SourceTransformation) and not t.bounded]
            if unbounded:  # Flink's StreamGraphGenerator refuses it, with this message
                raise InvalidProgramError(
                    "Detected an UNBOUNDED source with the 'execution.runtime-mode' set to 'BATCH'. This combination "
                    "is not allowed, please set the 'execution.runtime-mode' to STREAMING or AUTOMATIC "
                    f"(unbounded source: {unbounded[0]!r})")
        decided: dict = {}
        if configuration.get("execution.runtime-mode") == "BATCH":
            from streamkernel.graph.batch_parallelism import decide_batch_parallelism

            decided = decide_batch_parallelism(self._transformations, self.get_parallelism(), configuration)
        by_id = {t.id: t for t in _reachable(self._transformations)} if decided else {}
        saved = {i: by_id[i].parallelism for i in decided}
        for i, parallelism in decided.items():  # for this graph only: the program stays as written
            by_id[i].parallelism = parallelism
        try:
            graph = build_stream_graph(
                self._transformations,
                job_name=job_name or self._configuration.get_string("pipeline.name") or DEFAULT_JOB_NAME,
                default_max_parallelism_setting=self.get_max_parallelism() if self.get_max_parallelism() > 0 else None,
                chaining_enabled=self.is_chaining_enabled(),
                configuration=configuration,
            )
        finally:
            for i, parallelism in saved.items():
                by_id[i].parallelism = parallelism
        if clear_transformations:
            self._clear_transformations()
        return graph

    def get_job_graph(self, job_name: Optional[str] = None) -> JobGraph:
        """The JobGraph: the StreamGraph with chainable operators fused into job vertices."""
        return build_job_graph(self.get_stream_graph(job_name))

    def get_execution_graph(self, taskmanagers: int = 1, slots_per_taskmanager: Optional[int] = None,
                            slot_sharing: bool = True, job_name: Optional[str] = None) -> ExecutionGraph:
        """The ExecutionGraph for a cluster of ``taskmanagers`` x ``slots_per_taskmanager`` slots.

        ``slots_per_taskmanager=None`` sizes one TaskManager to fit. Raises NotEnoughSlotsError
        naming the shortfall when the cluster is too small.
        """
        return build_execution_graph(self.get_job_graph(job_name), taskmanagers, slots_per_taskmanager,
                                     slot_sharing)

    def get_execution_plan(self) -> str:
        """The JSON plan Flink's plan visualizer reads (nodes, pact, parallelism, predecessors),
        with the nodes PyFlink shows (its own Python operators added, consecutive ones merged)."""
        return execution_plan_json(self.get_stream_graph(), self.get_parallelism())

    def override_parallelism(self, parallelism: int) -> "StreamExecutionEnvironment":
        """Run the dataflow built so far at ``parallelism`` (a streamkernel extra).

        As ``flink run -p N`` does for a program: every operator whose parallelism was not
        set explicitly (``set_parallelism``) and that can run in parallel takes ``parallelism``;
        the environment's default becomes ``parallelism`` too. Used to restore a
        savepoint at another parallelism (``%flink restore PATH --parallelism N``).
        """
        self.set_parallelism(parallelism)
        for t in self._transformations:
            if t.parallelism_configured or (t.max_parallelism is not None and t.max_parallelism < parallelism):
                continue
            t.parallelism = parallelism
        return self

    # --------------------------------------------------------------- execution
    def execute(self, job_name: Optional[str] = None) -> Any:
        """Run the job to completion and return its JobExecutionResult."""
        from streamkernel.runtime.minicluster.client import execute_stream_graph

        return execute_stream_graph(self, self.get_stream_graph(job_name, clear_transformations=True))

    def execute_async(self, job_name: Optional[str] = None) -> Any:
        """Submit the job and return a JobClient at once; the job runs in the background."""
        from streamkernel.runtime.minicluster.client import submit_stream_graph

        return submit_stream_graph(self, self.get_stream_graph(job_name, clear_transformations=True))

    def _execute_and_collect(self, data_stream: "DataStream", job_execution_name: Optional[str],
                             limit: Optional[int]) -> Any:
        """Run the job with a collect sink on ``data_stream``; an iterator (or list with limit)."""
        from streamkernel.runtime.minicluster.client import execute_and_collect

        return execute_and_collect(self, data_stream, job_execution_name, limit)

    def close(self) -> None:
        """Release what this environment holds (its recorded transformations)."""
        self._clear_transformations()

    def __repr__(self) -> str:
        return (f"StreamExecutionEnvironment(parallelism={self.get_parallelism()}, "
                f"{len(self._transformations)} transformations)")


def _reachable(transformations: Any) -> list:
    """Every transformation the given ones read from (and themselves)."""
    from streamkernel.graph.stream_graph import _topological

    return _topological(transformations)
