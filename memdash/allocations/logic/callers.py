"""The responsible caller of each category (Matrix's: the first frame outside a system image on
the category's heaviest stack), over a parsed snapshot. Pure: no Django."""

from __future__ import annotations

from memdash.allocations.logic.analysis import frame_label, responsible_frame
from memdash.allocations.logic.document.parse import ParsedSnapshot

# category name -> (the label the statistics table shows, the id the frame is stored under)
Callers = dict[str, tuple[str, int]]


def responsible_callers(
    parsed: ParsedSnapshot, heaviest: dict[str, int], frame_ids: list[int]
) -> Callers:
    """Per category, the responsible caller of its heaviest stack (`heaviest`: category ->
    stack node, `totals.Totals.heaviest`); a category whose stack holds no app frame has none."""
    is_system = [f.is_system for f in parsed.frames]
    result: Callers = {}
    for category, stack in heaviest.items():
        frame = responsible_frame(stack, parsed.stack_parents, parsed.stack_frames, is_system)
        if frame is not None:
            f = parsed.frames[frame]
            label = frame_label(f.symbol, f.image, f.offset, f.address)
            result[category] = (label, frame_ids[frame])
    return result


def callers_of_nodes(
    parent_of: dict[int, int | None], frame_of: dict[int, int], system: set[int]
) -> dict[int, int]:
    """Every node's responsible caller's frame (`analysis.responsible_frame` of each node), in
    one pass: a walk outward stops at the first node already answered, so each node is visited
    once however deep the tree. Nodes with no app frame out to the root have none."""
    found: dict[int, int | None] = {}
    for start in frame_of:
        path = []
        node: int | None = start
        answer: int | None = None
        while node is not None:
            if node in found:
                answer = found[node]
                break
            frame = frame_of.get(node)
            if frame is None:  # a parent outside the tree given: no caller found past it
                break
            path.append(node)
            if frame not in system:
                answer = frame
                break
            node = parent_of.get(node)
        for visited in path:
            found[visited] = answer
    return {node: frame for node, frame in found.items() if frame is not None}
