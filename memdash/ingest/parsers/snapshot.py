"""memdash.snapshot v1: memdash's own snapshot format (see docs/formats.md), and the handlers of
the monitors' formats that convert to it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memdash.allocations.services import store_snapshot_document
from memdash.core.uploads import FormatHandler, Progress, StoreResult, UploadMeta
from memdash.ingest.parsers.monitor_common import meta_fields_from_upload

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
FiguresConverter = Callable[[bytes, Any, dict[str, Any]], tuple[dict[str, Any], dict[str, int]]]


def figures_handler(
    name: str, description: str, detect: Callable[[bytes, Any], bool], convert: FiguresConverter
) -> FormatHandler:
    """A `converting_handler` whose tool's own figures are added to the upload's counts (shown
    on the upload's page and in its status), named after the tool."""

    def process(raw: bytes, doc: Any, meta: UploadMeta, progress: Progress) -> StoreResult:
        progress("convert", 0.0)
        document, figures = convert(raw, doc, meta_fields_from_upload(meta))
        result = store_snapshot_document(document, meta, progress, source_format=name)
        result.counts.update(figures)
        return result

    return FormatHandler(name=name, description=description, detect=detect, process=process)
