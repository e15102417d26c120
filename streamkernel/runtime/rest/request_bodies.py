"""The request bodies of the REST API's actions (Flink's ``SavepointTriggerRequestBody``,
``StopWithSavepointRequestBody`` and ``CheckpointTriggerRequestBody``), checked field by field.

Flink maps a body with a strict JSON mapper and answers a mismatch with 400 ``Request did not
match expected format <Body>.``; here the message also names the field and what was wrong,
and nothing happens. An empty body is every field's default (as ``{}``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from streamkernel.runtime.rest.handlers.base import RestError

__all__ = ["SavepointTriggerRequest", "StopWithSavepointRequest", "CheckpointTriggerRequest",
           "parse_savepoint_trigger", "parse_stop_with_savepoint", "parse_checkpoint_trigger", "TRIGGER_ID"]

#: Flink's TriggerId as text: 32 hex digits.
TRIGGER_ID = re.compile(r"^[0-9a-fA-F]{32}$")
_FORMAT_TYPES = ("CANONICAL", "NATIVE")
_CHECKPOINT_TYPES = ("CONFIGURED", "FULL", "INCREMENTAL")


@dataclass(frozen=True)
class SavepointTriggerRequest:
    """``POST /jobs/:jobid/savepoints``: where to, whether to cancel the job after it, the format."""

    target_directory: Optional[str]
    cancel_job: bool
    format_type: str
    trigger_id: Optional[str]


@dataclass(frozen=True)
class StopWithSavepointRequest:
    """``POST /jobs/:jobid/stop``: where to, whether to drain (MAX_WATERMARK first), the format."""

    target_directory: Optional[str]
    drain: bool
    format_type: str
    trigger_id: Optional[str]


@dataclass(frozen=True)
class CheckpointTriggerRequest:
    """``POST /jobs/:jobid/checkpoints``: the checkpoint's type (FULL, INCREMENTAL, CONFIGURED)."""

    checkpoint_type: str
    trigger_id: Optional[str]


_Check = Callable[[Any], bool]


def _string(value: Any) -> bool:
    return isinstance(value, str)


def _boolean(value: Any) -> bool:
    return isinstance(value, bool)


def _one_of(names: tuple[str, ...]) -> _Check:
    return lambda value: isinstance(value, str) and value.upper() in names


def _trigger_id(value: Any) -> bool:
    return isinstance(value, str) and TRIGGER_ID.match(value) is not None


def _fields(body: Any, name: str, spec: Mapping[str, tuple[_Check, str, Any]]) -> dict[str, Any]:
    """The body's fields by name (defaults for absent or null ones); 400 naming the first bad one."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise RestError(400, f"Request did not match expected format {name}: the body must be a JSON object, "
                             f"got {json.dumps(body)[:80]}.")
    unknown = sorted(set(body) - set(spec))
    if unknown:
        raise RestError(400, f"Request did not match expected format {name}: unknown field \"{unknown[0]}\" "
                             f"(known: {', '.join(spec)}).")
    values: dict[str, Any] = {}
    for field_name, (check, expected, default) in spec.items():
        value = body.get(field_name)
        if value is None:
            values[field_name] = default
        elif not check(value):
            raise RestError(400, f"Request did not match expected format {name}: field \"{field_name}\" must be "
                                 f"{expected}, got {json.dumps(value)[:80]}.")
        else:
            values[field_name] = value
    return values


_FORMAT = (_one_of(_FORMAT_TYPES), "CANONICAL or NATIVE", "CANONICAL")
_TRIGGER = (_trigger_id, "a trigger id of 32 hex digits", None)


def parse_savepoint_trigger(body: Any) -> SavepointTriggerRequest:
    """The fields of a savepoint trigger's body (``target-directory``, ``cancel-job``, ``formatType``, ``triggerId``)."""
    values = _fields(body, "SavepointTriggerRequestBody", {
        "target-directory": (_string, "a string (a directory)", None),
        "cancel-job": (_boolean, "a boolean", False),
        "formatType": _FORMAT,
        "triggerId": _TRIGGER,
    })
    return SavepointTriggerRequest(values["target-directory"], values["cancel-job"], values["formatType"].upper(),
                                   _lower(values["triggerId"]))


def parse_stop_with_savepoint(body: Any) -> StopWithSavepointRequest:
    """The fields of a stop's body (``targetDirectory``, ``drain``, ``formatType``, ``triggerId``)."""
    values = _fields(body, "StopWithSavepointRequestBody", {
        "targetDirectory": (_string, "a string (a directory)", None),
        "drain": (_boolean, "a boolean", False),
        "formatType": _FORMAT,
        "triggerId": _TRIGGER,
    })
    return StopWithSavepointRequest(values["targetDirectory"], values["drain"], values["formatType"].upper(),
                                    _lower(values["triggerId"]))


def parse_checkpoint_trigger(body: Any) -> CheckpointTriggerRequest:
    """The fields of a checkpoint trigger's body (``checkpointType``, ``triggerId``)."""
    values = _fields(body, "CheckpointTriggerRequestBody", {
        "checkpointType": (_one_of(_CHECKPOINT_TYPES), "FULL, INCREMENTAL or CONFIGURED", "CONFIGURED"),
        "triggerId": _TRIGGER,
    })
    return CheckpointTriggerRequest(values["checkpointType"].upper(), _lower(values["triggerId"]))


def _lower(trigger_id: Optional[str]) -> Optional[str]:
    return trigger_id.lower() if trigger_id is not None else None
