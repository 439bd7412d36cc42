"""Tables as CSV: the rows a page shows, under the same filters, for a spreadsheet.

A page answers `?format=csv` (and `&table=NAME` where it shows more than one table, see
`csv_table`) with `csv_response`; its tables link there through the `{% csv_link %}` tag.
Numbers go out as plain numbers (bytes in bytes, rates as fractions), not as pages print them.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime

from django.http import HttpRequest, StreamingHttpResponse
from django.utils.http import content_disposition_header

# A text cell starting with one of these is a formula to a spreadsheet (CSV injection): it goes
# out with a leading apostrophe, which spreadsheets show as text and do not print.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
UNSAFE_IN_FILENAME = re.compile(r"[^A-Za-z0-9._-]+")

Cell = str | int | float | datetime | None


class _Echo:
    """A file for csv.writer whose write() hands the line back, to stream it."""

    def write(self, line: str) -> str:
        return line


def csv_table(request: HttpRequest, default: str = "") -> str | None:
    """The table a page is asked for as CSV (`?format=csv&table=NAME`; `default` without a
    name), or None when the page itself is asked for."""
    if request.GET.get("format") != "csv":
        return None
    return request.GET.get("table") or default


def csv_cell(value: Cell) -> str | int | float:
    """A cell as it goes out: numbers as they are, times in ISO 8601 with their offset, text
    that a spreadsheet would run as a formula behind an apostrophe."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return value
    if isinstance(value, datetime):
        return value.isoformat()
    text = str(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def safe_filename(name: str) -> str:
    """`name` with only letters, digits, dots, dashes and underscores, ending in .csv."""
    stem = UNSAFE_IN_FILENAME.sub("-", name.removesuffix(".csv")).strip("-.") or "table"
    return f"{stem[:120]}.csv"


def csv_lines(headers: Sequence[str], rows: Iterable[Sequence[Cell]]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow([csv_cell(h) for h in headers])
    for row in rows:
        yield writer.writerow([csv_cell(v) for v in row])


def csv_response(
    filename: str, headers: Sequence[str], rows: Iterable[Sequence[Cell]]
) -> StreamingHttpResponse:
    """The table as a CSV download, streamed row by row."""
    response = StreamingHttpResponse(
        csv_lines(headers, rows), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = content_disposition_header(
        as_attachment=True, filename=safe_filename(filename)
    )
    response["X-Content-Type-Options"] = "nosniff"
    return response
