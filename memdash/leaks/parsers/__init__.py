"""Parsers for the leak reports memdash imports as the tools print them (pure: no Django).

`detect_tool(raw)` names the tool whose output `raw` is, or None; `parse_leak_log(raw)` parses it
into a `LeakLog` or raises `InvalidUpload` with the line (or XML element) of the first problem.
"""

from __future__ import annotations

from typing import Protocol

from memdash.core.errors import InvalidUpload
from memdash.leaks.parsers import libmemunreachable, sanitizer, valgrind
from memdash.leaks.reports import LeakLog


class _Parser(Protocol):
    """What each parser module offers."""

    def looks_like(self, raw: bytes) -> bool: ...

    def parse(self, raw: bytes) -> LeakLog: ...


_PARSERS: dict[str, _Parser] = {
    "valgrind": valgrind,
    "sanitizer": sanitizer,
    "libmemunreachable": libmemunreachable,
}


def detect_tool(raw: bytes) -> str | None:
    for tool, module in _PARSERS.items():
        if module.looks_like(raw):
            return tool
    return None


def parse_leak_log(raw: bytes) -> LeakLog:
    tool = detect_tool(raw)
    if tool is None:
        raise InvalidUpload(
            "not a leak report: expected libmemunreachable (dumpsys meminfo --unreachable), "
            "LeakSanitizer/AddressSanitizer output or valgrind memcheck XML"
        )
    return _PARSERS[tool].parse(raw)
