"""Helpers shared by the leak report parsers."""

from __future__ import annotations

from memdash.core.logic.errors import InvalidUpload
from memdash.leaks.logic.reports import LeakReport, kind_label

# Detection only looks at the head of an upload: the markers sit near the top, and scanning a
# large non-matching upload for every format would cost more than it tells.
DETECT_WINDOW = 1 << 20


def decode_lines(raw: bytes) -> list[str]:
    """The upload as lines. Tools print ASCII with the odd Latin-1 byte in a symbol; a bad byte
    must not refuse a report, so it becomes U+FFFD."""
    text = raw.decode("utf-8", errors="replace").replace("\x00", "\ufffd")  # not in PG text
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def head_text(raw: bytes) -> str:
    return raw[:DETECT_WINDOW].decode("utf-8", errors="replace")


def last_line(lines: list[str]) -> int:
    """The number of the last line with anything on it: where reading stopped."""
    for number in range(len(lines), 0, -1):
        if lines[number - 1].strip():
            return number
    return 1


def parse_int(text: str) -> int:
    """A count as printed: decimal, maybe with thousands separators (valgrind's `1,191`)."""
    return int(text.replace(",", ""))


def check_report_totals(report: LeakReport, where: str = "") -> None:
    """A tool never lists more than it counted; if the records add up to more than the summary,
    the text was mangled (two reports run together, a summary edited by hand). `where` is the
    summary's path (the report's line by default)."""
    where = where or f"line {report.line}"
    if report.stated_bytes is not None and report.listed_bytes > report.stated_bytes:
        raise InvalidUpload(
            f"the listed leaks add up to {report.listed_bytes} bytes, more than the "
            f"{report.stated_bytes} bytes the summary counts",
            where,
        )
    if report.stated_allocations is not None and (
        report.listed_allocations > report.stated_allocations
    ):
        raise InvalidUpload(
            f"the listed leaks add up to {report.listed_allocations} allocations, more than "
            f"the {report.stated_allocations} the summary counts",
            where,
        )


def check_kind_totals(report: LeakReport, where: str) -> None:
    """The records of one kind never add up to more than the tool states for that kind."""
    for kind, totals in report.kind_totals().items():
        stated, listed = totals["stated_bytes"], totals["listed_bytes"]
        if stated is not None and listed is not None and listed > stated:
            raise InvalidUpload(
                f"the {kind_label(report.tool, kind)} records add up to {listed} bytes, more than "
                f"the {stated} bytes the summary states",
                where,
            )
