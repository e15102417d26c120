"""What the magics display: a drawn graph (SVG, or text without graphviz) and the plan JSON."""

from __future__ import annotations

import json
from typing import Any

from streamkernel.viz.display import GraphView

__all__ = ["GraphDisplay", "PlanDisplay"]


class GraphDisplay(GraphView):
    """A StreamGraph, JobGraph or ExecutionGraph shown inline; ``highlight`` holds the ids of
    the stream operators to mark (those the last cell added)."""


class PlanDisplay:
    """Flink's execution-plan JSON, shown as indented text (and as JSON to frontends that render it)."""

    def __init__(self, plan_json: str) -> None:
        self.plan_json = plan_json

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        return {"text/plain": self.plan_json, "application/json": json.loads(self.plan_json)}
