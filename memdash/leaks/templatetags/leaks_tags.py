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
