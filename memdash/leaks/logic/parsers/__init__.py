"""Parsers for the leak reports memdash imports as the tools print them (pure: no Django).

`detect_tool(raw)` names the tool (and form) whose output `raw` is, or None; `parse_leak_log(raw)`
parses it into a `LeakLog` or raises `InvalidUpload` with the line (or XML element) of the first
problem. Detection is broad on purpose: output that is plainly a tool's but holds no leak report
(a log cut off, another sanitizer's error, valgrind run without a leak check) reaches its parser,
which says what it is, where reading stopped and what to do.
"""

from __future__ import annotations

from typing import Protocol

from memdash.core.logic.errors import InvalidUpload
from memdash.leaks.logic.parsers import libmemunreachable, sanitizer, valgrind, valgrind_log
from memdash.leaks.logic.reports import LeakLog


class _Parser(Protocol):
    """What each parser module offers."""

    def looks_like(self, raw: bytes) -> bool: ...

    def parse(self, raw: bytes) -> LeakLog: ...


_PARSERS: dict[str, _Parser] = {
    "valgrind": valgrind,
    "valgrind-log": valgrind_log,
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
            "LeakSanitizer/AddressSanitizer output or valgrind memcheck's log or XML",
            "line 1",
        )
    return _PARSERS[tool].parse(raw)
