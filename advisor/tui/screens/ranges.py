"""Ranges: NVTX / annotation / step ranges as a tree aggregated by name path, with per-node stats and
the classifier's per-range verdicts."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Header, Static, Tree
from textual.widgets.tree import TreeNode

from advisor.api import range_tree
from advisor.tui.format import clip, fmt_pct, inert, ns
from advisor.tui.messages import DataReady
from advisor.tui.screens.base import AdvisorScreen
from advisor.tui.widgets import app_footer

if TYPE_CHECKING:
    from advisor.api import RangeVerdict, RunVerdict

# PyTorch emit_nvtx call ids, dropped from tree names by explore.range_tree: dropped here too to match verdicts
CALL_IDS = re.compile(r", (?:seq|op_id) = [0-9]+")


def range_verdicts(verdict: RunVerdict | None) -> dict[str, RangeVerdict]:
    """Range name -> the classifier's verdict for every range of that name (analyze's `verdict.ranges`:
    the range names with most time), keyed as the tree names them (inert, call ids dropped)."""
    out: dict[str, RangeVerdict] = {}
    for r in verdict.ranges if verdict is not None else ():
        out.setdefault(CALL_IDS.sub("", inert(r.name)), r)
    return out


def node_label(node: dict[str, Any], width: int, verdict: RangeVerdict | None = None) -> Text:
    text = Text(clip(node["path"][-1], width))
    text.append(f"  {node['count']}×  {ns(node['total_ns'])}  {fmt_pct(node['share_pct'])}", style="dim")
    if verdict and verdict.verdict.class_:
        text.append(f"  {verdict.verdict.class_}", style="bold")
    return text


def detail_text(node: dict[str, Any], verdicts: dict[str, RangeVerdict]) -> Text:
    text = Text(" > ".join(node["path"]), style="bold")
    text.append(f"\nsource {node['source']} · {node['count']} instance(s) · total {ns(node['total_ns'])} "
                f"({fmt_pct(node['share_pct'])} of the capture span) · mean {ns(node['mean_ns'])} · "
                f"max {ns(node['max_ns'])}")
    r = verdicts.get(node["path"][-1])
    text.append("\nverdict: ", style="dim")
    if r is None:
        text.append("n/a (the classifier gives verdicts for the range names with most time; not this one)",
                    style="dim")
        return text
    text.append(r.verdict.class_, style="bold")
    if r.verdict.cause:
        text.append(f": {inert(r.verdict.cause)}")
    text.append(f"  (all {r.count} ranges of this name, {ns(r.total_ns)}; confidence {r.verdict.confidence})",
                style="dim")
    return text


class RangesScreen(AdvisorScreen):
    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("loading…", id="ranges-info")
        tree: Tree[dict[str, Any]] = Tree("ranges", id="ranges")
        tree.show_root = False
        yield tree
        yield Static("", id="range-detail")
        yield app_footer()

    def on_mount(self) -> None:
        self.query_one("#ranges", Tree).focus()
        self.fetch("ranges", range_tree)

    def on_data_ready(self, message: DataReady) -> None:
        if message.kind == "ranges":
            self.show(message.data)

    def show(self, data: dict[str, Any]) -> None:
        nodes = data["nodes"]
        info = self.query_one("#ranges-info", Static)
        if not nodes:
            info.update(Text("No ranges in this run: annotate with NVTX (nsys -t nvtx) or "
                             "torch.profiler.record_function to see them here.", style="dim"))
            return
        info.update(Text(f"{data['total_ranges']} ranges, {len(nodes)} distinct paths shown; share of the capture "
                         f"span {ns(data['span_ns'])} (nested ranges overlap their parents). Enter/space: expand."))
        tree: Tree[dict[str, Any]] = self.query_one("#ranges", Tree)
        tree.clear()
        width = max(self.app.size.width - 40, 20)
        verdicts = range_verdicts(self.session.analysis.verdict)
        by_path: dict[tuple[str, ...], TreeNode[dict[str, Any]]] = {(): tree.root}
        for node in sorted(nodes, key=lambda n: len(n["path"])):  # stable: keeps total-desc order per level
            path = tuple(node["path"])
            parent = by_path.get((node["source"],) + path[:-1] if path[:-1] else ())
            if parent is None:
                continue  # its parent was cut off by the node limit
            by_path[(node["source"],) + path] = parent.add(node_label(node, width, verdicts.get(path[-1])), data=node)
        tree.root.expand()
        tree.cursor_line = 0

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[dict[str, Any]]) -> None:
        if event.node.data is not None:
            verdicts = range_verdicts(self.session.analysis.verdict)
            self.query_one("#range-detail", Static).update(detail_text(event.node.data, verdicts))
