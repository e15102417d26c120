"""OutputTag, the small enums, TimerService, MemorySize and SlotSharingGroup."""

from __future__ import annotations

import pickle

import pytest

from streamkernel.common.typeinfo import RowTypeInfo, Types
from streamkernel.datastream.checkpointing_mode import CheckpointingMode
from streamkernel.datastream.execution_mode import RuntimeExecutionMode
from streamkernel.datastream.externalized_checkpoint_retention import ExternalizedCheckpointRetention
from streamkernel.datastream.memory_size import MemorySize
from streamkernel.datastream.output_tag import OutputTag
from streamkernel.datastream.slot_sharing_group import SlotSharingGroup
from streamkernel.datastream.time_domain import TimeDomain
from streamkernel.datastream.timerservice import TimerService
from streamkernel.errors import IllegalConfigurationError, InvalidProgramError


def test_output_tag_identity_is_its_id() -> None:
    late = OutputTag("late", Types.STRING())
    assert late.tag_id == "late" and late.type_info == Types.STRING()
    assert late == OutputTag("late") and hash(late) == hash(OutputTag("late"))
    assert late != OutputTag("early")
    assert {late: 1}[OutputTag("late", Types.INT())] == 1
    assert repr(OutputTag("side")) == "OutputTag('side')"
    restored = pickle.loads(pickle.dumps(late))
    assert restored == late and restored.type_info == Types.STRING()
    assert late.get_java_output_tag() is late
    with pytest.raises(AttributeError):
        late.tag_id = "other"  # type: ignore[misc]


def test_output_tag_turns_a_list_into_a_row_type() -> None:
    tag = OutputTag("rows", [Types.STRING(), Types.LONG()])
    assert isinstance(tag.type_info, RowTypeInfo)
    assert tag.type_info.get_field_types() == [Types.STRING(), Types.LONG()]


@pytest.mark.parametrize("tag_id", ["", None, 5])
def test_output_tag_needs_a_non_empty_string_id(tag_id) -> None:
    with pytest.raises(InvalidProgramError, match="tag_id"):
        OutputTag(tag_id)


def test_output_tag_rejects_a_non_type_info() -> None:
    with pytest.raises(InvalidProgramError, match="type_info"):
        OutputTag("x", str)


def test_enums_have_pyflinks_members() -> None:
    assert [m.name for m in TimeDomain] == ["EVENT_TIME", "PROCESSING_TIME"]
    assert [m.name for m in CheckpointingMode] == ["EXACTLY_ONCE", "AT_LEAST_ONCE"]
    assert [m.name for m in RuntimeExecutionMode] == ["STREAMING", "BATCH", "AUTOMATIC"]
    assert [m.name for m in ExternalizedCheckpointRetention] == [
        "DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION", "NO_EXTERNALIZED_CHECKPOINTS"]


def test_timer_service_is_an_interface_with_all_six_methods() -> None:
    assert TimerService.__abstractmethods__ == {
        "current_processing_time", "current_watermark",
        "register_processing_time_timer", "register_event_time_timer",
        "delete_processing_time_timer", "delete_event_time_timer",
    }


def test_memory_size_units() -> None:
    size = MemorySize.of_mebi_bytes(1536)
    assert size.get_bytes() == 1536 << 20
    assert (size.get_kibi_bytes(), size.get_mebi_bytes(), size.get_gibi_bytes(), size.get_tebi_bytes()) == (
        1536 << 10, 1536, 1, 0)
    assert str(size) == "1536 mb" and str(MemorySize(1 << 30)) == "1 gb" and str(MemorySize(10)) == "10 bytes"
    assert MemorySize.parse("64 mb") == MemorySize.of_mebi_bytes(64)
    assert MemorySize(1) < MemorySize(2) and max(MemorySize(3), MemorySize(1)) == MemorySize(3)
    with pytest.raises(InvalidProgramError, match="bytes_size"):
        MemorySize(-1)
    with pytest.raises(IllegalConfigurationError):
        MemorySize.parse("lots")


def test_slot_sharing_group_without_resources() -> None:
    group = SlotSharingGroup.builder("heavy").build()
    assert group.get_name() == "heavy"
    assert (group.get_cpu_cores(), group.get_task_heap_memory(), group.get_managed_memory()) == (None, None, None)
    assert group.get_external_resources() == {} and not group.has_resources()
    assert group == SlotSharingGroup("heavy") and group != SlotSharingGroup("light")
    assert repr(group) == "SlotSharingGroup('heavy')"


def test_slot_sharing_group_with_resources_fills_flinks_defaults() -> None:
    group = (
        SlotSharingGroup.builder("gpu")
        .set_cpu_cores(1)
        .set_task_heap_memory_mb(100)
        .set_external_resource("gpu", 1)
        .build()
    )
    assert group.get_cpu_cores() == 1.0
    assert group.get_task_heap_memory() == MemorySize.of_mebi_bytes(100)
    assert group.get_task_off_heap_memory() == MemorySize(0) == group.get_managed_memory()
    assert group.get_external_resources() == {"gpu": 1.0}
    assert group.has_resources()
    assert group.get_java_slot_sharing_group() is group


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: SlotSharingGroup.builder("g").set_cpu_cores(1.0).build(), "task heap memory are required"),
        (lambda: SlotSharingGroup.builder("g").set_managed_memory_mb(10).build(), "cpu cores"),
        (lambda: SlotSharingGroup.builder("g").set_cpu_cores(0), "cpu_cores"),
        (lambda: SlotSharingGroup.builder("g").set_task_heap_memory(MemorySize(0)), "task_heap_memory"),
        (lambda: SlotSharingGroup.builder("g").set_task_heap_memory(100), "MemorySize"),
        (lambda: SlotSharingGroup.builder("g").set_external_resource("gpu", 0), "gpu"),
        (lambda: SlotSharingGroup.builder(""), "name"),
        (lambda: SlotSharingGroup("g", cpu_cores=1.0), "required"),
    ],
)
def test_slot_sharing_group_validation(build, message: str) -> None:
    with pytest.raises(InvalidProgramError, match=message):
        build()
