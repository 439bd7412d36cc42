"""Reading retain-cycle uploads (retain-cycles-v1): the JSON form and the detector's printed text.

Pure functions over plain data (no Django): they return cycles as tuples of links and raise
`InvalidUpload(message, path)` on the first bad value, with its JSON path or `line N`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.rfc3339 import timestamp_field
from memdash.cycles.logic.contract import (
    FIELD_LENGTHS,
    FORMAT_NAME,
    FORMAT_VERSION,
    MAX_CYCLE_LENGTH,
    MAX_NAME_LENGTH,
    MAX_VIA_PARTS,
)

NULL_CLASS = "(null)"  # the detector's name for an object freed while it ran

# One link of a loop: the object's class and the reference path that reaches it from the
# previous object (the first object is reached from the last one).
Link = tuple[str, tuple[str, ...]]
Cycle = tuple[Link, ...]


@dataclass
class ParsedCycles:
    """The cycles of one upload; transient cycles (with a freed object) are only counted.
    `ownership`, when a tool says it (Xcode's `leaks`), is each cycle's references' ownership
    aligned with its links (`strong`, `weak`, `unsafe_unretained`, `unowned`; "" unknown)."""

    cycles: list[Cycle] = field(default_factory=list)
    dropped: int = 0
    ownership: list[tuple[str, ...]] = field(default_factory=list)

    def ownership_of(self, index: int) -> tuple[str, ...]:
        return self.ownership[index] if index < len(self.ownership) else ()


@dataclass
class CyclesDocument:
    """A validated JSON upload. Fields the document leaves out are None (the upload's own
    metadata may supply them)."""

    app: Any
    build_version: str | None
    build_number: str | None
    build_commit: str | None
    device_id: str | None
    device_model: str | None
    os: str | None
    captured_at: datetime | None
    parsed: ParsedCycles


# --- names ------------------------------------------------------------------------------------

# A block prints with its address, `<<__NSMallocBlock__:0x1c2a3b4c>>`; the address is dropped so
# that the same block type groups across reports.
_BLOCK_WITH_ADDRESS = re.compile(r"^<<(?P<cls>[^<>:]+):0x[0-9A-Fa-f]+>>$")


def reduce_class_name(name: str) -> str:
    """The class of an object as printed, without a block's address."""
    match = _BLOCK_WITH_ADDRESS.match(name)
    return match.group("cls").strip() if match else name


def _check_name(value: Any, path: str, what: str) -> str:
    if not isinstance(value, str):
        raise InvalidUpload(f"{what} must be a string", path)
    if not value.strip():
        raise InvalidUpload(f"{what} must not be empty", path)
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidUpload(f"{what} is longer than {MAX_NAME_LENGTH} characters", path)
    if any(ch in value for ch in "\x00\r\n"):
        raise InvalidUpload(f"{what} must not contain control characters", path)
    return value


def _add_cycle(parsed: ParsedCycles, links: list[Link]) -> None:
    if any(cls == NULL_CLASS for cls, _via in links):
        parsed.dropped += 1
    else:
        parsed.cycles.append(tuple(links))


# --- JSON -------------------------------------------------------------------------------------


def _optional_string(obj: dict[str, Any], key: str, path: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidUpload("must be a string", f"{path}.{key}")
    limit = FIELD_LENGTHS.get(key, MAX_NAME_LENGTH)
    if len(value) > limit:
        raise InvalidUpload(f"is longer than {limit} characters", f"{path}.{key}")
    if "\x00" in value:  # PostgreSQL text cannot hold it
        raise InvalidUpload("must not contain NUL characters", f"{path}.{key}")
    return value


def _optional_object(doc: dict[str, Any], key: str) -> dict[str, Any]:
    value = doc.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidUpload("must be an object", key)
    return value


def parse_captured_at(value: Any, path: str = "captured_at") -> datetime | None:
    if value is None:
        return None
    return timestamp_field(value, path)


def parse_json_link(element: Any, path: str) -> Link:
    if not isinstance(element, dict):
        raise InvalidUpload('must be an object {"class": ..., "via": [...]}', path)
    cls = reduce_class_name(_check_name(element.get("class"), f"{path}.class", "class"))
    via = element.get("via", [])
    if not isinstance(via, list):
        raise InvalidUpload("must be a list of reference names", f"{path}.via")
    if len(via) > MAX_VIA_PARTS:
        raise InvalidUpload(f"has more than {MAX_VIA_PARTS} parts", f"{path}.via")
    parts = tuple(
        _check_name(part, f"{path}.via[{i}]", "reference name") for i, part in enumerate(via)
    )
    return cls, parts


def parse_json_cycles(value: Any, path: str = "cycles") -> ParsedCycles:
    if not isinstance(value, list):
        raise InvalidUpload("must be a list of cycles", path)
    parsed = ParsedCycles()
    for i, cycle in enumerate(value):
        cycle_path = f"{path}[{i}]"
        if not isinstance(cycle, list):
            raise InvalidUpload("must be a list of objects in reference order", cycle_path)
        if not cycle:
            raise InvalidUpload("a cycle must have at least one object", cycle_path)
        if len(cycle) > MAX_CYCLE_LENGTH:
            raise InvalidUpload(f"has more than {MAX_CYCLE_LENGTH} objects", cycle_path)
        links = [parse_json_link(element, f"{cycle_path}[{j}]") for j, element in enumerate(cycle)]
        _add_cycle(parsed, links)
    return parsed


def parse_json_document(doc: Any) -> CyclesDocument:
    """Validates a `memdash.retain-cycles` v1 document (everything but the app's identity, which
    the caller checks against the upload key)."""
    if not isinstance(doc, dict):
        raise InvalidUpload("a retain-cycles upload must be a JSON object")
    if doc.get("format") != FORMAT_NAME:
        raise InvalidUpload(f"must be {FORMAT_NAME!r}", "format")
    if type(doc.get("version")) is not int or doc["version"] != FORMAT_VERSION:
        raise InvalidUpload(
            f"unsupported version {doc.get('version')!r}; this server reads version "
            f"{FORMAT_VERSION}",
            "version",
        )
    build = _optional_object(doc, "build")
    device = _optional_object(doc, "device")
    if "cycles" not in doc:
        raise InvalidUpload("is required", "cycles")
    return CyclesDocument(
        app=doc.get("app"),
        build_version=_optional_string(build, "version", "build"),
        build_number=_optional_string(build, "number", "build"),
        build_commit=_optional_string(build, "commit", "build"),
        device_id=_optional_string(device, "id", "device"),
        device_model=_optional_string(device, "model", "device"),
        os=_optional_string(device, "os", "device"),
        captured_at=parse_captured_at(doc.get("captured_at")),
        parsed=parse_json_cycles(doc["cycles"]),
    )


# --- printed text -----------------------------------------------------------------------------

# `NSLog` may put its own header before the message: "2026-11-20 10:12:03.123 Chat[812:4411] ".
_NSLOG_HEADER = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d{4})? \S+\[\d+:[0-9a-fA-Fx]+\] "
)
_ELEMENT_PREFIX = "-> "
_PATH_SEPARATOR = " -> "


def _strip_nslog_header(text: str) -> str:
    stripped = text.lstrip()
    match = _NSLOG_HEADER.match(stripped)
    return stripped[match.end() :] if match else stripped


def looks_like_printed_cycles(raw: bytes) -> bool:
    """The detector's printed NSSet of arrays: `{(` ... `"-> ...` ... `)}`."""
    head = raw[:4096].decode("utf-8", errors="replace")
    body = _strip_nslog_header(head)
    if not body.startswith("{("):
        return False
    return raw.rstrip().endswith(b")}") and (b'"-> ' in raw[:4096] or body[2:].strip() == ")}")


@dataclass
class _Token:
    kind: str  # "{(", ")}", "(", ")", ",", "str"
    text: str
    line: int


_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r"}


def _read_quoted(text: str, start: int, line: int) -> tuple[str, int]:
    """The NSString description of a string: double quotes, backslash escapes, \\Uxxxx."""
    out: list[str] = []
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch == "\n":
            break
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if nxt in "Uu" and re.fullmatch(r"[0-9A-Fa-f]{4}", text[i + 2 : i + 6]):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
        out.append(ch)
        i += 1
    raise InvalidUpload("unterminated quoted string", f"line {line}")


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i, line = 0, 1
    while i < len(text):
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif ch.isspace():
            i += 1
        elif text.startswith("{(", i):
            tokens.append(_Token("{(", "{(", line))
            i += 2
        elif text.startswith(")}", i):
            tokens.append(_Token(")}", ")}", line))
            i += 2
        elif ch in "(),":
            tokens.append(_Token(ch, ch, line))
            i += 1
        elif ch == '"':
            value, i = _read_quoted(text, i, line)
            tokens.append(_Token("str", value, line))
        else:
            raise InvalidUpload(
                f"unexpected character {ch!r} in the printed cycles", f"line {line}"
            )
    return tokens


def parse_printed_element(element: str, line: int) -> Link:
    """`-> _a -> _b -> Class ` is (Class, ("_a", "_b")); `-> Class ` is (Class, ())."""
    path = f"line {line}"
    if not element.startswith(_ELEMENT_PREFIX):
        raise InvalidUpload(f'an element must start with "-> ", got {element[:60]!r}', path)
    body = element[len(_ELEMENT_PREFIX) :]
    body = body.removesuffix(" ")  # the detector's trailing space
    if body.endswith(" ->") or body.strip() == "->":
        raise InvalidUpload("class must not be empty", path)
    parts = body.split(_PATH_SEPARATOR)
    if len(parts) > MAX_VIA_PARTS + 1:
        raise InvalidUpload(f"has more than {MAX_VIA_PARTS} reference names", path)
    *via, cls = parts
    cls = reduce_class_name(_check_name(cls.strip(), path, "class"))
    return cls, tuple(_check_name(part.strip(), path, "reference name") for part in via)


class _TokenStream:
    def __init__(self, tokens: list[_Token], last_line: int) -> None:
        self.tokens = tokens
        self.pos = 0
        self.last_line = last_line

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, kind: str, expected: str) -> _Token:
        token = self.peek()
        if token is None:
            raise InvalidUpload(
                f"the printed cycles end early; expected {expected}",
                f"line {self.last_line}",
            )
        if token.kind != kind:
            raise InvalidUpload(
                f"expected {expected}, found {token.text[:40]!r}", f"line {token.line}"
            )
        self.pos += 1
        return token


def _read_cycle(stream: _TokenStream, parsed: ParsedCycles) -> None:
    opening = stream.take("(", '"(" opening a cycle')
    links: list[Link] = []
    while True:
        token = stream.take("str", 'a quoted element "-> ... "')
        links.append(parse_printed_element(token.text, token.line))
        if len(links) > MAX_CYCLE_LENGTH:
            raise InvalidUpload(
                f"a cycle has more than {MAX_CYCLE_LENGTH} objects",
                f"line {opening.line}",
            )
        nxt = stream.peek()
        if nxt is not None and nxt.kind == ",":
            stream.pos += 1
            continue
        stream.take(")", '"," or ")" closing the cycle')
        break
    _add_cycle(parsed, links)


def parse_printed_cycles(raw: bytes | str) -> ParsedCycles:
    """The detector's `NSLog(@"%@", cycles)`: an NSSet (`{( ... )}`) of arrays of elements."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidUpload(f"not UTF-8 text (byte {exc.start})") from None
    else:
        text = raw
    skipped_lines = len(text) - len(text.lstrip())
    first_line = text[:skipped_lines].count("\n") + 1
    body = _strip_nslog_header(text)
    tokens = _tokens(body)
    for token in tokens:
        token.line += first_line - 1
    stream = _TokenStream(tokens, last_line=first_line + body.count("\n"))
    parsed = ParsedCycles()
    stream.take("{(", '"{(" (the printed set of cycles)')
    while (ahead := stream.peek()) is not None and ahead.kind != ")}":
        _read_cycle(stream, parsed)
        nxt = stream.peek()
        if nxt is not None and nxt.kind == ",":
            stream.pos += 1
    stream.take(")}", '")}" closing the set of cycles')
    extra = stream.peek()
    if extra is not None:
        raise InvalidUpload("unexpected text after the printed set of cycles", f"line {extra.line}")
    return parsed
