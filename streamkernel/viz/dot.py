"""DOT text from the rendered model: the input of graphviz's ``dot``.

The output is deterministic (same model, same text: nodes, edges and clusters in model
order, attributes in a fixed order), laid out left to right, with TaskManager/slot frames
as nested ``subgraph cluster_*`` blocks. Sources and sinks get their own shapes; a
highlighted node is filled in amber with a thick outline.

Escaping (rationale): every id and label is a double-quoted DOT string. Inside one, DOT
itself only knows ``\\"``; labels then interpret backslash escapes (``\\n``, ``\\l``,
``\\N`` ...) and HTML character entities (``&amp;``). So a name is shown verbatim by
writing ``\\`` for a backslash, ``\\"`` for a quote, ``&amp;`` for ``&`` and ``\\n``
for a line break; other control characters become U+FFFD. ``<`` and ``>`` stay as they
are: a quoted string is never an HTML-like label, and graphviz escapes them itself in SVG
(entities there would only make the DOT source, shown in the text fallback, unreadable:
every chain name holds ``->``).
"""

from __future__ import annotations

import re

from streamkernel.viz.rendered import RenderedCluster, RenderedGraph, RenderedNode

__all__ = ["to_dot", "escape_label", "escape_id", "NODE_STYLE", "HIGHLIGHT_STYLE"]

#: Shape and fill colour per node kind.
NODE_STYLE: dict[str, tuple[str, str]] = {
    "source": ("cds", "#dcedc8"),
    "operator": ("box", "#e3f2fd"),
    "chain": ("box", "#d1e4f6"),
    "sink": ("box3d", "#f8d7e3"),
    "subtask": ("box", "#f5f5f5"),
}
#: Attributes that mark a highlighted node (added after the kind's own).
HIGHLIGHT_STYLE: dict[str, str] = {"fillcolor": "#ffc046", "color": "#c56000", "penwidth": "2.5"}

_FONT = "Helvetica"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def escape_label(text: str) -> str:
    r"""``text`` as the inside of a quoted DOT label that graphviz shows verbatim.

    >>> print(escape_label('say "hi" & <go> to C:\\dir'))
    say \"hi\" &amp; <go> to C:\\dir
    """
    text = str(text).replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    text = _CONTROL.sub("\ufffd", text)
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("&", "&amp;")
    return text.replace("\n", "\\n")


def escape_id(identifier: str) -> str:
    """``identifier`` as a quoted DOT id (ids take no label escapes, only ``\\"``)."""
    text = _CONTROL.sub("\ufffd", str(identifier).replace("\n", " ").replace("\r", " "))
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(rendered: RenderedGraph) -> str:
    """The DOT source of a rendered graph, ready for ``dot -Tsvg``.

    >>> from streamkernel.viz.rendered import RenderedGraph, RenderedNode, RenderedEdge
    >>> print(to_dot(RenderedGraph("t", (RenderedNode("a", ("A",)),))).splitlines()[0])
    digraph "streamkernel" {
    """
    out = ['digraph "streamkernel" {']
    title = "".join(escape_label(line) + "\\l" for line in rendered.title.splitlines())  # \l: left-aligned
    out.append(f'  graph [rankdir=LR, label="{title}", labelloc=t, labeljust=l, '
               f'fontname="{_FONT}", fontsize=13, nodesep=0.3, ranksep=0.5, newrank=true];')
    out.append(f'  node [fontname="{_FONT}", fontsize=11, shape=box, style="rounded,filled", '
               'color="#546e7a", margin="0.15,0.06"];')
    out.append(f'  edge [fontname="{_FONT}", fontsize=9, color="#546e7a", fontcolor="#37474f"];')
    cluster_names = _cluster_names(rendered.clusters)
    for cluster in rendered.child_clusters(None):
        _emit_cluster(rendered, cluster, cluster_names, out, depth=1)
    for node in rendered.nodes_in(None):
        out.append("  " + _node_statement(node))
    for edge in rendered.edges:
        attrs = [f'label="{escape_label(edge.label)}"'] if edge.label else []
        if edge.style != "solid":
            attrs.append(f"style={edge.style}")
        if edge.style == "bold":
            attrs.append("penwidth=2")
        suffix = f" [{', '.join(attrs)}]" if attrs else ""
        out.append(f"  {escape_id(edge.source)} -> {escape_id(edge.target)}{suffix};")
    out.append("}")
    return "\n".join(out) + "\n"


def _cluster_names(clusters: tuple[RenderedCluster, ...]) -> dict[str, str]:
    """``cluster_<id>`` with the id reduced to word characters, made unique by position."""
    names: dict[str, str] = {}
    used: set[str] = set()
    for i, c in enumerate(clusters):
        name = "cluster_" + re.sub(r"\W", "_", c.id, flags=re.ASCII)
        if name in used:
            name = f"{name}_{i}"
        used.add(name)
        names[c.id] = name
    return names


def _emit_cluster(rendered: RenderedGraph, cluster: RenderedCluster, names: dict[str, str],
                  out: list[str], depth: int) -> None:
    pad = "  " * depth
    outer = cluster.parent is None
    out.append(f"{pad}subgraph {names[cluster.id]} {{")
    out.append(f'{pad}  label="{escape_label(cluster.label)}"; fontsize={12 if outer else 10}; '
               f'style="{"rounded,filled" if outer else "rounded,dashed,filled"}"; '
               f'fillcolor="{"#eceff1" if outer else "#ffffff"}"; color="{"#78909c" if outer else "#90a4ae"}";')
    for child in rendered.child_clusters(cluster.id):
        _emit_cluster(rendered, child, names, out, depth + 1)
    for node in rendered.nodes_in(cluster.id):
        out.append(f"{pad}  {_node_statement(node)}")
    out.append(f"{pad}}}")


def _node_statement(node: RenderedNode) -> str:
    shape, fill = NODE_STYLE[node.kind]
    attrs = {"label": f'"{escape_label(node.label)}"', "shape": shape, "fillcolor": f'"{fill}"'}
    if node.kind in ("source", "sink"):
        attrs["style"] = '"filled"'
    if node.fill:
        attrs.update({"fillcolor": f'"{escape_label(node.fill)}"', "style": '"filled"'})
    if node.highlighted:
        attrs.update({k: f'"{v}"' for k, v in HIGHLIGHT_STYLE.items()})
    if node.tooltip:
        attrs["tooltip"] = f'"{escape_label(node.tooltip)}"'
    body = ", ".join(f"{k}={v}" for k, v in attrs.items())
    return f"{escape_id(node.id)} [{body}];"
