"""Stack frames and report totals as the leak pages show them."""

from __future__ import annotations

from typing import Any

from django import template

from memdash.leaks.logic.fingerprint import is_allocator_frame
from memdash.leaks.logic.reports import StackFrame, kind_label

register = template.Library()


@register.filter(name="kind_label")
def kind_label_filter(kind: str, tool: str) -> str:
    """A record's kind in its tool's words: `{{ record.kind|kind_label:report.tool }}`."""
    return kind_label(tool, kind)


@register.filter
def frame_text(frame: dict[str, Any]) -> str:
    """symbol (file:line), else module+offset, else the address: as symbolicated as it came."""
    return StackFrame.from_dict(frame).display()


@register.filter
def is_allocator(frame: dict[str, Any]) -> bool:
    """Frames the fingerprint skips (malloc, interceptors, …), shown dimmed."""
    return is_allocator_frame(StackFrame.from_dict(frame))


@register.filter
def top_frames(frames: list[dict[str, Any]], count: int = 3) -> list[dict[str, Any]]:
    """The first frames that are not the allocator's, for the group list."""
    return [f for f in frames if not is_allocator(f)][:count]


@register.filter
def tree_line(row: dict[str, Any]) -> str:
    """A stored node of an Xcode `leaks` tree as leaks printed it, without the indentation:
    `1 (32 bytes) __strong _dataSource --> ROOT CYCLE: <ChatDataSource 0x…> [32]`."""
    words = []
    if "count" in row:
        words.append(f"{row['count']} ({row.get('size', '')})")
    if row.get("edge"):
        words.append(f"{row['edge']} -->")
    if row.get("back"):
        words.append("CYCLE BACK TO")
    elif row.get("root"):
        words.append(f"{row['root']}:")
    block = f"<{row.get('class', '')} {row.get('address', '')}>".replace(" >", ">")
    words.append(f"{block} [{row.get('bytes', 0)}]")
    if row.get("content"):
        words.append(f" {row['content']}")
    return " ".join(words)


@register.filter
def tree_indent(depth: Any) -> int:
    """A tree row's indentation in characters, as leaks indents (3 a level); 0 for no number."""
    return 3 * depth if isinstance(depth, int) and 0 <= depth < 1000 else 0
