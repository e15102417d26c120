"""SlotSharingGroup: a named group of operators that may share task slots, with optional resources.

As ``pyflink.datastream.slot_sharing_group`` (which also exports :class:`MemorySize`).
Operators in the same slot sharing group can have one subtask each in the same slot, so a
job needs as many slots as its largest parallelism per group; operators in different groups
never share a slot. ``op.slot_sharing_group("name")`` puts an operator in a group by name;
``op.slot_sharing_group(SlotSharingGroup.builder("name").set_cpu_cores(1.0)...build())``
also says what a slot of that group needs.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from streamkernel.datastream.memory_size import MemorySize
from streamkernel.errors import InvalidProgramError

__all__ = ["MemorySize", "SlotSharingGroup"]

_RESOURCES_REQUIRED = (
    "The cpu cores and task heap memory are required when specifying the resource of a slot "
    "sharing group. You need to explicitly configure them with positive value."
)


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidProgramError(f"SlotSharingGroup: name must be a non-empty str, got {name!r}")
    return name


def _check_memory(value: Any, argument: str, positive: bool) -> MemorySize:
    if not isinstance(value, MemorySize):
        raise InvalidProgramError(
            f"SlotSharingGroup.Builder: {argument} must be a MemorySize "
            f"(e.g. MemorySize.of_mebi_bytes(64)), got {type(value).__name__}"
        )
    if positive and value.get_bytes() <= 0:
        raise InvalidProgramError(f"SlotSharingGroup.Builder: {argument} should be positive.")
    return value


class SlotSharingGroup:
    """The name and the resource needs (all optional) of a slot sharing group.

    Without resources only the name matters; with resources, cpu cores and task heap memory
    are required (Flink's rule) and off-heap and managed memory default to zero. Usually
    built with :meth:`builder`.
    """

    def __init__(
        self,
        name: str,
        cpu_cores: Optional[float] = None,
        task_heap_memory: Optional[MemorySize] = None,
        task_off_heap_memory: Optional[MemorySize] = None,
        managed_memory: Optional[MemorySize] = None,
        external_resources: Optional[Dict[str, float]] = None,
    ) -> None:
        self._name = _check_name(name)
        resources = dict(external_resources or {})
        if cpu_cores is not None and task_heap_memory is not None:
            task_off_heap_memory = task_off_heap_memory or MemorySize.ZERO
            managed_memory = managed_memory or MemorySize.ZERO
        elif (cpu_cores, task_heap_memory, task_off_heap_memory, managed_memory) != (None,) * 4 \
                or resources:
            raise InvalidProgramError(f"SlotSharingGroup '{name}': {_RESOURCES_REQUIRED}")
        self._cpu_cores = cpu_cores
        self._task_heap_memory = task_heap_memory
        self._task_off_heap_memory = task_off_heap_memory
        self._managed_memory = managed_memory
        self._external_resources = resources

    @staticmethod
    def builder(name: str) -> "SlotSharingGroup.Builder":
        """Start building a slot sharing group called ``name``."""
        return SlotSharingGroup.Builder(name)

    def get_name(self) -> str:
        """The name of the group."""
        return self._name

    def get_managed_memory(self) -> Optional[MemorySize]:
        """The managed memory a slot of this group needs, or None if no resources are set."""
        return self._managed_memory

    def get_task_heap_memory(self) -> Optional[MemorySize]:
        """The task heap memory a slot of this group needs, or None."""
        return self._task_heap_memory

    def get_task_off_heap_memory(self) -> Optional[MemorySize]:
        """The task off-heap memory a slot of this group needs, or None."""
        return self._task_off_heap_memory

    def get_cpu_cores(self) -> Optional[float]:
        """The CPU cores a slot of this group needs, or None."""
        return self._cpu_cores

    def get_external_resources(self) -> Dict[str, float]:
        """The external resources (e.g. ``{'gpu': 1.0}``) a slot of this group needs."""
        return dict(self._external_resources)

    def get_java_slot_sharing_group(self) -> "SlotSharingGroup":
        """There is no JVM in streamkernel: returns this group."""
        return self

    def has_resources(self) -> bool:
        """Whether resources were specified (a streamkernel extra for the scheduler)."""
        return self._cpu_cores is not None

    def _key(self) -> tuple:
        return (
            self._name,
            self._cpu_cores,
            self._task_heap_memory,
            self._task_off_heap_memory,
            self._managed_memory,
            tuple(sorted(self._external_resources.items())),
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SlotSharingGroup) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        if not self.has_resources():
            return f"SlotSharingGroup('{self._name}')"
        extra = f", external_resources={self._external_resources}" if self._external_resources else ""
        return (
            f"SlotSharingGroup('{self._name}', cpu_cores={self._cpu_cores}, "
            f"task_heap_memory={self._task_heap_memory}, "
            f"task_off_heap_memory={self._task_off_heap_memory}, "
            f"managed_memory={self._managed_memory}{extra})"
        )

    class Builder:
        """Builder of a :class:`SlotSharingGroup`; every setter returns the builder."""

        def __init__(self, name: str) -> None:
            self._name = _check_name(name)
            self._cpu_cores: Optional[float] = None
            self._task_heap_memory: Optional[MemorySize] = None
            self._task_off_heap_memory: Optional[MemorySize] = None
            self._managed_memory: Optional[MemorySize] = None
            self._external_resources: Dict[str, float] = {}

        def set_cpu_cores(self, cpu_cores: float) -> "SlotSharingGroup.Builder":
            """The CPU cores a slot of this group needs (positive)."""
            if isinstance(cpu_cores, bool) or not isinstance(cpu_cores, (int, float)) \
                    or cpu_cores <= 0:
                raise InvalidProgramError(
                    f"SlotSharingGroup.Builder: cpu_cores should be positive, got {cpu_cores!r}"
                )
            self._cpu_cores = float(cpu_cores)
            return self

        def set_task_heap_memory(self, task_heap_memory: MemorySize) -> "SlotSharingGroup.Builder":
            """The task heap memory a slot of this group needs (positive)."""
            self._task_heap_memory = _check_memory(task_heap_memory, "task_heap_memory", True)
            return self

        def set_task_heap_memory_mb(self, task_heap_memory_mb: int) -> "SlotSharingGroup.Builder":
            """The task heap memory in MiB."""
            return self.set_task_heap_memory(MemorySize.of_mebi_bytes(task_heap_memory_mb))

        def set_task_off_heap_memory(
            self, task_off_heap_memory: MemorySize
        ) -> "SlotSharingGroup.Builder":
            """The task off-heap memory a slot of this group needs."""
            self._task_off_heap_memory = _check_memory(
                task_off_heap_memory, "task_off_heap_memory", False
            )
            return self

        def set_task_off_heap_memory_mb(
            self, task_off_heap_memory_mb: int
        ) -> "SlotSharingGroup.Builder":
            """The task off-heap memory in MiB."""
            return self.set_task_off_heap_memory(MemorySize.of_mebi_bytes(task_off_heap_memory_mb))

        def set_managed_memory(self, managed_memory: MemorySize) -> "SlotSharingGroup.Builder":
            """The managed memory (e.g. for RocksDB) a slot of this group needs."""
            self._managed_memory = _check_memory(managed_memory, "managed_memory", False)
            return self

        def set_managed_memory_mb(self, managed_memory_mb: int) -> "SlotSharingGroup.Builder":
            """The managed memory in MiB."""
            return self.set_managed_memory(MemorySize.of_mebi_bytes(managed_memory_mb))

        def set_external_resource(self, name: str, value: float) -> "SlotSharingGroup.Builder":
            """Add (or replace) the external resource ``name`` with amount ``value`` (> 0)."""
            if not isinstance(name, str) or not name:
                raise InvalidProgramError(
                    f"SlotSharingGroup.Builder: external resource name must be a non-empty "
                    f"str, got {name!r}"
                )
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise InvalidProgramError(
                    f"SlotSharingGroup.Builder: the amount of external resource '{name}' "
                    f"should be positive, got {value!r}"
                )
            self._external_resources[name] = float(value)
            return self

        def build(self) -> "SlotSharingGroup":
            """Build the group; resources need both cpu cores and task heap memory."""
            return SlotSharingGroup(
                self._name,
                self._cpu_cores,
                self._task_heap_memory,
                self._task_off_heap_memory,
                self._managed_memory,
                self._external_resources,
            )
