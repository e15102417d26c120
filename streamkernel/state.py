"""Look inside a checkpoint or savepoint: its state as pandas DataFrames.

Like Flink's State Processor API (``SavepointReader.read(env, path, backend)
.readKeyedState(uid, reader)``), without writing a reader function: every keyed state
entry becomes a row. The checkpoint is validated as a restore would validate it (metadata
parses, every file has its recorded size and SHA-256)::

    from streamkernel.state import read_checkpoint

    view = read_checkpoint("savepoints/savepoint-3f2a1c-0123456789ab")
    view.operators                      # ['counts', 'node-3f9c...', ...]: uids, or node-<generated id>
    view.keyed_state("counts")          # operator, state, key_group, key, namespace, value
    view.keyed_state("counts", "sum")   # one state only
    view.operator_state("source")       # operator list / union / broadcast state
    view.timers("windows")              # registered event- and processing-time timers
    view.raw_state("source")            # {subtask: what the operator stored, e.g. a source position}

Operators are named by key (uid, else ``node-<generated id>``) or, when unambiguous, by name.
Reading unpickles the state files: read only checkpoints you trust.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional, Union

from streamkernel.runtime.checkpoint.metadata import CheckpointMetadata, CompletedCheckpoint
from streamkernel.runtime.checkpoint.storage import load_checkpoint
from streamkernel.runtime.state.key_groups_snapshot import TIMER_DOMAINS
from streamkernel.runtime.state.ttl_states import unwrap_ttl

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["CheckpointView", "read_checkpoint", "KEYED_STATE_COLUMNS", "OPERATOR_STATE_COLUMNS", "TIMER_COLUMNS"]

KEYED_STATE_COLUMNS = ["operator", "state", "key_group", "key", "namespace", "value"]
"""The columns of :meth:`CheckpointView.keyed_state`."""
OPERATOR_STATE_COLUMNS = ["operator", "state", "mode", "subtask", "key", "value"]
"""The columns of :meth:`CheckpointView.operator_state` (``key``: list position, or map key)."""
TIMER_COLUMNS = ["operator", "service", "domain", "key_group", "key", "namespace", "timestamp"]
"""The columns of :meth:`CheckpointView.timers`."""


def read_checkpoint(path: Union[str, "os.PathLike[str]", CompletedCheckpoint]) -> "CheckpointView":
    """Open a checkpoint (``chk-<n>``), a savepoint directory, its ``_metadata`` file, or a
    job's checkpoint directory (its latest valid checkpoint) for reading.

    Raises :class:`~streamkernel.errors.CheckpointCorruptedError` naming the bad file.
    """
    return CheckpointView(load_checkpoint(path))


class CheckpointView:
    """The contents of one completed checkpoint or savepoint, by operator (read-only)."""

    def __init__(self, completed: CompletedCheckpoint) -> None:
        self.completed = completed
        self._by_operator: dict[str, dict[int, dict]] = {}
        for (_, subtask_index), snapshot in sorted(completed.task_states().items()):
            for key, state in snapshot.items():
                self._by_operator.setdefault(key, {})[subtask_index] = state

    # ------------------------------------------------------------------ what is there
    @property
    def metadata(self) -> CheckpointMetadata:
        """The checkpoint's metadata: job, id, timestamp, operators, vertices, files."""
        return self.completed.metadata

    @property
    def path(self) -> str:
        """The checkpoint's directory."""
        return self.completed.path

    @property
    def checkpoint_id(self) -> int:
        """The checkpoint's id."""
        return self.completed.checkpoint_id

    @property
    def is_savepoint(self) -> bool:
        """Whether this is a savepoint."""
        return self.completed.is_savepoint

    @property
    def operators(self) -> list[str]:
        """The keys of the operators in the checkpoint (uid, else ``node-<generated id>``)."""
        keys = list(self.metadata.operators)
        return keys + [key for key in self._by_operator if key not in self.metadata.operators]

    def state_names(self, operator: str) -> list[str]:
        """The names of ``operator``'s keyed states."""
        names: dict[str, None] = {}
        for state in self._states(operator).values():
            for name in ((state.get("keyed") or {}).get("states") or {}):
                names[name] = None
        return list(names)

    def summary(self) -> "pandas.DataFrame":
        """One row per operator: name, parallelism, max parallelism, keyed states, entries,
        operator states, timers, and whether it stored raw state (a source position ...)."""
        import pandas as pd

        rows = []
        for key in self.operators:
            recorded = self.metadata.operators.get(key)
            states = self._by_operator.get(key, {})
            operator_names = {name for s in states.values() for name in ((s.get("operator") or {}).get("states") or {})}
            rows.append({
                "operator": key, "name": recorded.name if recorded else None,
                "parallelism": recorded.parallelism if recorded else len(states),
                "max_parallelism": recorded.max_parallelism if recorded else None,
                "keyed_states": ", ".join(self.state_names(key)) if states else "",
                "keyed_entries": sum(len(entries) for s in states.values()
                                     for st in ((s.get("keyed") or {}).get("states") or {}).values()
                                     for entries in st["key_groups"].values()),
                "operator_states": ", ".join(sorted(operator_names)),
                "timers": sum(len(entries) for s in states.values() for t in (s.get("timers") or ())
                              for domain in TIMER_DOMAINS for entries in (t.get(domain) or {}).values()),
                "raw": any(s.get("raw") is not None for s in states.values()),
            })
        return pd.DataFrame(rows, columns=["operator", "name", "parallelism", "max_parallelism", "keyed_states",
                                           "keyed_entries", "operator_states", "timers", "raw"])

    # ------------------------------------------------------------------ state as tables
    def keyed_state(self, operator: str, state_name: Optional[str] = None) -> "pandas.DataFrame":
        """Every keyed state entry of ``operator`` (or only of ``state_name``), one row each:
        operator, state, key_group, key, namespace (None, or a window), value (list state:
        the list; map state: the dict; TTL state: the value without its timestamp)."""
        import pandas as pd

        key = self._resolve(operator)
        if state_name is not None and state_name not in self.state_names(key):
            raise KeyError(f"operator '{key}' has no keyed state named {state_name!r}; its keyed states: "
                           f"{self.state_names(key) or 'none'}")
        rows = []
        for state in self._states(key).values():
            for name, table in ((state.get("keyed") or {}).get("states") or {}).items():
                if state_name is not None and name != state_name:
                    continue
                ttl, state_type = bool(table.get("ttl")), table["type"]
                for group, entries in table["key_groups"].items():
                    for entry_key, namespace, value in entries:
                        rows.append((key, name, group, entry_key, namespace,
                                     unwrap_ttl(state_type, value) if ttl else value))
        rows.sort(key=lambda row: (row[1], row[2]))
        return pd.DataFrame(rows, columns=KEYED_STATE_COLUMNS)

    def operator_state(self, operator: str) -> "pandas.DataFrame":
        """``operator``'s list, union list and broadcast state: one row per list element
        (``key``: its position in the subtask's list) or broadcast map entry (``key``: the map key)."""
        import pandas as pd

        key = self._resolve(operator)
        rows: list[tuple] = []
        for subtask, state in sorted(self._states(key).items()):
            for name, entry in ((state.get("operator") or {}).get("states") or {}).items():
                items = entry["entries"].items() if entry["mode"] == "broadcast" else enumerate(entry["entries"])
                rows.extend((key, name, entry["mode"], subtask, item_key, value) for item_key, value in items)
        return pd.DataFrame(rows, columns=OPERATOR_STATE_COLUMNS)

    def timers(self, operator: str) -> "pandas.DataFrame":
        """``operator``'s registered timers: service, domain (event_time / processing_time),
        key_group, key, namespace and timestamp, in timestamp order."""
        import pandas as pd

        key = self._resolve(operator)
        rows: list[tuple] = []
        for state in self._states(key).values():
            for timer in state.get("timers") or ():
                for domain in TIMER_DOMAINS:
                    for group, entries in (timer.get(domain) or {}).items():
                        rows.extend((key, timer.get("name"), domain, group, timer_key, namespace, timestamp)
                                    for timer_key, namespace, timestamp in entries)
        rows.sort(key=lambda row: (row[6], row[1], row[2]))
        return pd.DataFrame(rows, columns=TIMER_COLUMNS)

    def raw_state(self, operator: str) -> dict[int, Any]:
        """What ``operator`` itself stored per subtask (source positions, sink transactions ...)."""
        key = self._resolve(operator)
        return {subtask: state.get("raw") for subtask, state in sorted(self._states(key).items())}

    # ------------------------------------------------------------------ helpers
    def _resolve(self, operator: str) -> str:
        if operator in self._by_operator or operator in self.metadata.operators:
            return operator
        matches = [key for key, op in self.metadata.operators.items() if operator in (op.name, op.uid)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise KeyError(f"{operator!r} names several operators ({', '.join(matches)}); use one of these keys")
        names = ", ".join(f"{key} ({op.name})" for key, op in self.metadata.operators.items())
        raise KeyError(f"no operator {operator!r} in {self._kind()} {self.checkpoint_id}; operators: {names}")

    def _states(self, operator: str) -> dict[int, dict]:
        return self._by_operator.get(self._resolve(operator), {})

    def _kind(self) -> str:
        return "savepoint" if self.is_savepoint else "checkpoint"

    def __repr__(self) -> str:
        return (f"CheckpointView({self._kind()} {self.checkpoint_id} of job {self.metadata.job_name!r}, "
                f"{len(self.operators)} operators, {self.path!r})")
