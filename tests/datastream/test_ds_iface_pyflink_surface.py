"""The interface modules offer PyFlink 2.x's public names and methods (shared/pyflink-api.json)."""

from __future__ import annotations

import importlib
import json
import pathlib

import pytest

API_FILE = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "pyflink-api.json"

# PyFlink module -> ours, and the names PyFlink merely imports there (not part of the concept).
MODULES = {
    "pyflink.datastream.window": ("streamkernel.datastream.window", set()),
    "pyflink.datastream.state": ("streamkernel.datastream.state", set()),
    "pyflink.datastream.checkpoint_config": ("streamkernel.datastream.checkpoint_config", set()),
    "pyflink.datastream.checkpointing_mode": ("streamkernel.datastream.checkpointing_mode", set()),
    "pyflink.datastream.output_tag": (
        "streamkernel.datastream.output_tag",
        {"Optional", "Union", "get_gateway", "RowTypeInfo", "TypeInformation", "Types"},
    ),
    "pyflink.datastream.time_domain": ("streamkernel.datastream.time_domain", {"Enum"}),
    "pyflink.datastream.timerservice": ("streamkernel.datastream.timerservice", {"ABC", "abstractmethod"}),
}

# Names of the top-level ``pyflink.datastream`` that live in these modules.
TOP_LEVEL = {
    "CheckpointConfig": "checkpoint_config",
    "CheckpointingMode": "checkpointing_mode",
    "ExternalizedCheckpointRetention": "externalized_checkpoint_retention",
    "CheckpointStorage": "checkpoint_storage",
    "JobManagerCheckpointStorage": "checkpoint_storage",
    "FileSystemCheckpointStorage": "checkpoint_storage",
    "CustomCheckpointStorage": "checkpoint_storage",
    "StateBackend": "state_backend",
    "HashMapStateBackend": "state_backend",
    "EmbeddedRocksDBStateBackend": "state_backend",
    "CustomStateBackend": "state_backend",
    "PredefinedOptions": "state_backend",
    "MemorySize": "slot_sharing_group",
    "SlotSharingGroup": "slot_sharing_group",
    "RuntimeExecutionMode": "execution_mode",
    "OutputTag": "output_tag",
    "TimeDomain": "time_domain",
    "TimerService": "timerservice",
    "Window": "window",
    "TimeWindow": "window",
    "CountWindow": "window",
    "GlobalWindow": "window",
    "WindowAssigner": "window",
    "MergingWindowAssigner": "window",
    "Trigger": "window",
    "TriggerResult": "window",
}


@pytest.fixture(scope="module")
def api() -> dict:
    if not API_FILE.exists():
        pytest.skip(f"{API_FILE} not found (shared/ is not beside the repository)")
    return json.loads(API_FILE.read_text())


def _missing(module_name: str, name: str, members: object) -> list[str]:
    module = importlib.import_module(module_name)
    if not hasattr(module, name):
        return [f"{module_name}.{name}"]
    if not isinstance(members, list):
        return []
    owner = getattr(module, name)
    return [f"{module_name}.{name}.{member}" for member in members if not hasattr(owner, member)]


@pytest.mark.parametrize("pyflink_module", sorted(MODULES))
def test_module_has_pyflinks_names_and_methods(api: dict, pyflink_module: str) -> None:
    ours, imported_only = MODULES[pyflink_module]
    missing = []
    for name, members in api[pyflink_module].items():
        if name not in imported_only:
            missing += _missing(ours, name, members)
    assert missing == []


def test_top_level_names_of_these_modules(api: dict) -> None:
    missing = []
    for name, module in TOP_LEVEL.items():
        assert name in api["pyflink.datastream"], name
        missing += _missing(f"streamkernel.datastream.{module}", name, api["pyflink.datastream"][name])
    assert missing == []
