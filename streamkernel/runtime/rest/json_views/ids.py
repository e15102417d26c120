"""Flink's ids in the REST API: a job's JobID (32 hex digits) and a vertex's JobVertexID.

Flink's JobVertexID is the hash of the vertex's head operator (StreamGraphHasherV2), so it
stays the same when the same program runs again. Here it is the MD5 of the head operator's
``operator_id`` (its uid, else its generated id: :func:`~streamkernel.runtime.core.deployment.hex_id`);
:func:`vertex_id_of` is the one mapping every handler uses.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

from streamkernel.runtime.core.deployment import hex_id

if TYPE_CHECKING:  # pragma: no cover
    from streamkernel.graph.job_graph import JobGraph
    from streamkernel.runtime.jobmaster.job_status import JobDetails, VertexDetails

__all__ = ["HEX32", "vertex_id_of", "vertex_by_hex", "vertex_hex_ids"]

#: Flink's pattern of a JobID, JobVertexID, ResourceID or trigger id.
HEX32 = re.compile(r"^[0-9a-fA-F]{32}$")


def vertex_id_of(job_graph: Optional["JobGraph"], vertex_id: int) -> str:
    """The 32-hex JobVertexID of job vertex ``vertex_id`` (the id of its head operator).

    Without a JobGraph (a snapshot built outside a JobMaster) the hash of the number itself.
    """
    key = str(vertex_id)
    if job_graph is not None:
        try:
            head = job_graph.vertex(vertex_id).head_id
            key = job_graph.stream_graph.node(head).operator_id
        except KeyError:
            pass
    return hex_id(key)


def vertex_hex_ids(details: "JobDetails") -> dict[int, str]:
    """Every vertex of the job: its number -> its JobVertexID."""
    return {v.vertex_id: vertex_id_of(details.job_graph, v.vertex_id) for v in details.vertices}


def vertex_by_hex(details: "JobDetails", hex_id: str) -> Optional["VertexDetails"]:
    """The vertex of the job whose JobVertexID is ``hex_id`` (any case), or None."""
    wanted = hex_id.lower()
    for vertex in details.vertices:
        if vertex_id_of(details.job_graph, vertex.vertex_id) == wanted:
            return vertex
    return None
