"""memdash.snapshot v1: memdash's own snapshot format (see docs/formats.md), and the handlers of
the monitors' formats that convert to it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memdash.allocations.writes.snapshots import store_snapshot_document
from memdash.core.writes.uploads import FormatHandler, Progress, StoreResult, UploadMeta
from memdash.ingest.logic.monitor_common import meta_fields_from_upload

# (raw bytes, parsed JSON or NOT_JSON, the upload's fields as plain data) -> a snapshot document
Converter = Callable[[bytes, Any, dict[str, Any]], dict[str, Any]]


def detect(raw: bytes, doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("format") == "memdash.snapshot"


def process(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
    return store_snapshot_document(doc, meta, progress)


HANDLER = FormatHandler(
    name="memdash.snapshot",
    description="memdash allocation snapshot JSON",
    detect=detect,
    process=process,
)


def converting_handler(
    name: str, description: str, detect: Callable[[bytes, Any], bool], convert: Converter
) -> FormatHandler:
    """The handler of a monitor's own format: convert the upload to a memdash.snapshot document,
    then store it through the snapshot pipeline (which validates the whole document before it
    writes anything), recording `name` as the snapshot's source format."""

    def process(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
        progress("convert", 0.0)
        document = convert(raw, doc, meta_fields_from_upload(meta))
        return store_snapshot_document(document, meta, progress, source_format=name)

    return FormatHandler(name=name, description=description, detect=detect, process=process)


# A converter whose format carries the tool's own totals besides the allocations: it gives the
# document and those figures (heaptrack's peak and temporary allocations, massif's snapshots).
# (the snapshot's document, or the snapshot read from it: `store_snapshot_document` takes both)
FiguresConverter = Callable[[bytes, Any, dict[str, Any]], tuple[Any, dict[str, int]]]
# The same figures as the tool prints them: label -> {"value", "unit" (bytes, count or ms),
# "order"}, kept on the snapshot (`Snapshot.tool_figures`) and shown on its page.
ToolFigures = Callable[[dict[str, int]], dict[str, dict[str, Any]]]


def tool_figure(order: int, value: int, unit: str) -> dict[str, Any]:
    """One figure of `Snapshot.tool_figures`; `order` keeps the tool's own order (a JSON
    object's keys have none in PostgreSQL)."""
    return {"value": value, "unit": unit, "order": order}


def figures_handler(
    name: str,
    description: str,
    detect: Callable[[bytes, Any], bool],
    convert: FiguresConverter,
    tool_figures: ToolFigures,
) -> FormatHandler:
    """A `converting_handler` whose tool's own figures are added to the upload's counts (shown
    on the upload's page and in its status), named after the tool, and kept on the snapshot in
    the tool's words (`tool_figures` of those counts)."""

    def process(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
        progress("convert", 0.0)
        document, figures = convert(raw, doc, meta_fields_from_upload(meta))
        result = store_snapshot_document(
            document, meta, progress, source_format=name, tool_figures=tool_figures(figures)
        )
        result.counts.update(figures)
        return result

    return FormatHandler(name=name, description=description, detect=detect, process=process)
