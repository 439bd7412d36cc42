"""The formats memdash accepts, and how an upload finds its own.

Every door (API, page, command) hands the bytes to `services.receive_upload`; the task,
`tasks.process_upload`, detects the format here and calls its handler inside one transaction.
A handler parses and validates first (raising `InvalidUpload` with the path of the first bad
value) and only then stores.
"""

from __future__ import annotations

from typing import Any

import orjson

from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.reading import GZIP_MAGIC, JSON_WHITESPACE, ZSTD_MAGIC, Cap
from memdash.core.writes.uploads import NOT_JSON, FormatHandler, json_format_of
from memdash.ingest.writes import parse_memory
from memdash.ingest.writes.parse_memory import FACTORS
from memdash.ingest.writes.parsers import registry

# The upload's own fields, for formats that carry no app or build (query parameters, form
# fields, the command's options): the optional fields of `core.writes.uploads.UploadMeta`.
META_FIELDS = (
    "build_version", "build_number", "build_commit", "device_id", "device_model", "os", "session",
    "utc_offset",
)  # fmt: skip


def read_directly(raw: bytes) -> tuple[FormatHandler, Any] | None:
    """The upload's handler and what its own reader makes of the bytes (a snapshot's rows into
    columns, without the generic JSON tree: `registry.READERS`), or None: parse it as JSON and
    `detect`. A reader takes only content it reads whole and valid, so that whatever is wrong
    with an upload is told by the generic way, with its path."""
    for handler, reader in registry.READERS:
        doc = reader(raw)
        if doc is not None:
            return handler, doc
    return None


def parse_json(raw: bytes) -> Any:
    """The parsed document, or NOT_JSON for content that is not JSON (text reports)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return NOT_JSON


def detect(raw: bytes, doc: Any) -> FormatHandler:
    """The handler of the upload's format (`registry.HANDLERS` is most specific first)."""
    handlers = registry.HANDLERS
    fmt = json_format_of(doc)
    for handler in handlers:
        if fmt is not None:
            if handler.name == fmt[0]:
                return handler
        elif handler.detect(raw, doc):
            return handler
    if fmt is not None:
        known = ", ".join(h.name for h in handlers if h.name.startswith("memdash."))
        raise InvalidUpload(f"unknown format {fmt[0]!r}; expected one of {known}", "format")
    expected = "; ".join(f"{h.name} ({h.description})" for h in handlers)
    if doc is NOT_JSON:
        if raw.lstrip()[:1] in (b"{", b"["):  # meant as JSON: say where it breaks
            message, where = _json_error(raw)
            raise InvalidUpload(f"not valid JSON: {message}", where)
        raise _unrecognised_text(raw, expected)
    raise InvalidUpload(f"unrecognised document; expected one of: {expected}")


def _json_error(raw: bytes) -> tuple[str, str]:
    """orjson's own account of what breaks the document (what, line, column), and that place
    as a path; parsed again only on this error path, so that a good upload is parsed once."""
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return str(exc), f"line {exc.lineno} column {exc.colno}"
    return "unreadable", "line 1"


# Text formats' own detection is broad (a tool's output that holds no report still reaches its
# parser, which names it and says what to do); what is left here looks like none of them.
_PEEK = 64 * 1024


def _unrecognised_text(raw: bytes, expected: str) -> InvalidUpload:
    """Not JSON and no format's: where reading stopped (the first line with anything on it, or
    byte 0 of binary data) and what memdash reads instead."""
    head = raw[:_PEEK]
    if b"\x00" in head or head.decode("utf-8", errors="replace").count("\ufffd") > len(head) // 8:
        return InvalidUpload(
            "binary data that is no format memdash reads (a compressed upload must be gzip, "
            "bzip2 or xz; zstd only as heaptrack writes its own files); expected one of: "
            f"{expected}",
            "byte 0",
        )
    lines = head.decode("utf-8", errors="replace").splitlines()
    number, text = next(((n, t.strip()) for n, t in enumerate(lines, 1) if t.strip()), (1, ""))
    shown = text if len(text) <= 80 else f"{text[:80]}…"
    return InvalidUpload(
        f"not JSON and not a report memdash recognises: reading stopped at line {number} "
        f"({shown!r}), which begins none of the formats it reads; expected one of: {expected}",
        f"line {number}",
    )


# --- What parsing will cost, told before parsing (memdash.ingest.writes.parse_memory) ---------


def costed_format(head: bytes, content: bytes | None = None) -> str | None:
    """The format whose memory factor a parse is estimated with, from the content's `head`
    (its first bytes) or, in a worker, the whole `content`: compressed content is the one
    format that reads it; a JSON document the format it names (the dearest if several); text or
    binary the format that detects it; a JSON document that names none the dearest of the JSON
    formats that do not name themselves, or, from its head alone, the cheapest of all (a lower
    bound, so that what is refused on receipt a worker would refuse too). None: content no
    format reads (refused unparsed)."""
    if head.startswith(ZSTD_MAGIC):
        return "heaptrack"
    if head.startswith(GZIP_MAGIC):
        return "pprof"
    sample = head if content is None else content
    json_like = head.lstrip(JSON_WHITESPACE)[:1] in (b"{", b"[")
    if json_like and (named := parse_memory.named_format(sample)):
        return named
    for handler in registry.HANDLERS:  # as `detect` finds a text format: most specific first
        if handler.name in FACTORS and handler.detect(sample, NOT_JSON):
            return handler.name
    if not json_like:
        return None
    return parse_memory.unnamed_json(whole=content is not None)


def content_cap(head: bytes) -> Cap:
    """How much content that starts with `head` may be read (before any parser, on receipt and
    in the worker): the budget over the factor of the cheapest format it may be
    (`costed_format`; text that no format detects from its head, the cheapest text format's), so
    that no content is held that its parse could not afford; past it, 413 naming the setting.
    Content compressed inside its format whose frame declares a size its parse cannot afford
    is refused at once."""
    return _assess(head)


def check_parse(content: bytes) -> None:
    """In the worker, before parsing: refuse (413) content whose parse would pass the setting
    (a snapshot of raw events costed as such)."""
    _assess(content[: parse_memory.HEAD_BYTES], len(content), content)


def _assess(head: bytes, size: int | None = None, content: bytes | None = None) -> Cap:
    return parse_memory.assess(costed_format(head, content), head, size, content)
