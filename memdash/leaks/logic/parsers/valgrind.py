"""valgrind memcheck's XML output (`--xml=yes`), protocol versions 4 to 6.

Each leak is an `<error>` whose `<kind>` starts with `Leak_`:

```xml
<error>
  <unique>0x3</unique> <tid>1</tid> <kind>Leak_DefinitelyLost</kind>
  <xwhat>
    <text>200 (120 direct, 80 indirect) bytes in 3 blocks are definitely lost in loss
          record 4 of 8</text>
    <leakedbytes>200</leakedbytes>
    <leakedblocks>3</leakedblocks>
  </xwhat>
  <stack><frame><ip>0x483877F</ip><obj>…</obj><fn>malloc</fn><file>…</file><line>299</line></frame>…</stack>
</error>
```

`leakedbytes` is direct plus indirect bytes, `leakedblocks` counts the direct blocks only: the
indirect blocks are listed again in their own `Leak_IndirectlyLost` records (with
`--show-leak-kinds` including `indirect`). So a record adds its *direct* bytes to the report's
sum, and keeps `leakedbytes` and the indirect bytes in its detail. Protocol 4 (valgrind 3.19
here) has no byte totals: what the tool states is the number of loss records ("loss record i of
N"). Protocol 6 (valgrind's releases since May 2025) adds `<leak_summary>` after each leak check
(bytes and `in_blocks` of `definitely_lost`, `indirectly_lost`, `possibly_lost`,
`still_reachable`, `suppressed`), the LEAK SUMMARY of the text log, and `<heap_summary>` and
`<error_summary>`; protocol 5 only adds `--track-fds` errors. The leak records read the same in
all three.

The upload is untrusted XML, so it is parsed with expat directly and any DOCTYPE or entity
declaration is refused (no entity expansion, no external references, no "billion laughs").
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import NoReturn
from xml.parsers import expat

from memdash.core.logic.errors import InvalidUpload
from memdash.core.logic.numbers import whole_number
from memdash.leaks.logic.parsers.common import (
    check_kind_totals,
    check_report_totals,
    head_text,
    parse_int,
)
from memdash.leaks.logic.reports import (
    DIRECT,
    INDIRECT,
    LOST_KINDS,
    NOTHING_LISTED,
    POSSIBLE,
    REACHABLE,
    SUPPRESSED,
    VALGRIND,
    LeakLog,
    LeakRecord,
    LeakReport,
    StackFrame,
    Suppression,
)

SUPPORTED_PROTOCOLS = (4, 5, 6)

_KINDS = {
    "Leak_DefinitelyLost": DIRECT,
    "Leak_IndirectlyLost": INDIRECT,
    "Leak_PossiblyLost": POSSIBLE,
    "Leak_StillReachable": REACHABLE,
}
_DELTA = r"(?: \([+-][\d,]+\))?"  # what an added leak check prints after each count
# A loss record's first line, as the text log and the XML's <text> print it.
LOSS_RECORD = re.compile(
    rf"^\s*(?P<bytes>[\d,]+){_DELTA}"
    rf"(?: \((?P<direct>[\d,]+){_DELTA} direct, (?P<indirect>[\d,]+){_DELTA} indirect\))?"
    rf" bytes in (?P<blocks>[\d,]+){_DELTA} blocks? (?:are|is) (?P<kind>.*?) in (?:new )?loss "
    r"record (?P<index>[\d,]+) of (?P<of>[\d,]+)"
)
VERSION = re.compile(r"Using (Valgrind-[^\s]+)")
THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")  # 64146 or 64,146; never 6,41,46
# <leak_summary>'s elements (and the LEAK SUMMARY's lines, with spaces) for each kind.
SUMMARY_KINDS = {
    "definitely_lost": DIRECT,
    "indirectly_lost": INDIRECT,
    "possibly_lost": POSSIBLE,
    "still_reachable": REACHABLE,
    "suppressed": SUPPRESSED,
}


def looks_like(raw: bytes) -> bool:
    head = head_text(raw)[:4096]
    return "<valgrindoutput" in head


def parse(raw: bytes) -> LeakLog:
    root = parse_xml_safely(raw)
    if root.tag != "valgrindoutput":
        raise InvalidUpload(f"expected <valgrindoutput>, found <{root.tag}>", root.tag)
    check_protocol(root)
    log = LeakLog(tool=VALGRIND)
    info = run_info(root)
    log.info.update(info)
    reports = split_into_checks(root, info)
    suppressions = [
        Suppression(template=text_of(pair, "name"), count=int_of(pair, "count", "suppcounts"))
        for pair in root.iterfind("suppcounts/pair")
    ]
    reports[-1].suppressions = suppressions  # counted over the whole run
    log.reports = reports
    return log


def stated_totals(report: LeakReport, kinds: dict[str, tuple[int, int]]) -> None:
    """A leak check's summary (per kind: bytes, blocks) as the report's stated figures: the
    lost kinds add up to its leaked total; still reachable and suppressed stay apart."""
    report.stated_kinds = dict(kinds)
    lost = [kinds.get(kind, (0, 0)) for kind in LOST_KINDS]
    report.stated_bytes = sum(size for size, _ in lost)
    report.stated_allocations = sum(blocks for _, blocks in lost)


def parse_xml_safely(raw: bytes) -> ET.Element:
    """Build an ElementTree with expat, refusing DTDs: memdash never needs entities, and a
    document that declares any is either not valgrind's or an attack on the parser."""
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def refuse_dtd(*_args: object) -> NoReturn:
        raise InvalidUpload(
            "XML with a DOCTYPE or entity declaration is refused",
            f"line {parser.CurrentLineNumber}",
        )

    parser.StartDoctypeDeclHandler = refuse_dtd
    parser.EntityDeclHandler = refuse_dtd
    parser.UnparsedEntityDeclHandler = refuse_dtd
    parser.ExternalEntityRefHandler = refuse_dtd
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(raw, True)
        return builder.close()
    except expat.ExpatError as error:
        raise InvalidUpload(
            f"not well-formed XML: {expat.ErrorString(error.code)}", f"line {error.lineno}"
        ) from None


def check_protocol(root: ET.Element) -> None:
    version_text = text_of(root, "protocolversion")
    if whole_number(version_text) not in SUPPORTED_PROTOCOLS:
        raise InvalidUpload(
            f"valgrind XML protocol {version_text or '(missing)'} is not supported "
            f"(supported: {', '.join(map(str, SUPPORTED_PROTOCOLS))})",
            "valgrindoutput.protocolversion",
        )
    tool = text_of(root, "protocoltool") or text_of(root, "tool")
    if tool != "memcheck":
        raise InvalidUpload(
            f"only memcheck reports leaks; this output is from {tool or 'an unnamed tool'}",
            "valgrindoutput.protocoltool",
        )


def run_info(root: ET.Element) -> dict[str, object]:
    info: dict[str, object] = {"protocol": int(text_of(root, "protocolversion"))}
    for line in root.iterfind("preamble/line"):
        if match := VERSION.search(line.text or ""):
            info["version"] = match[1]
    if exe := text_of(root, "args/argv/exe"):
        args = [arg.text or "" for arg in root.iterfind("args/argv/arg")]
        info["command"] = " ".join([exe, *args])
    if options := [arg.text or "" for arg in root.iterfind("args/vargv/arg")]:
        info["options"] = " ".join(options)
    other_errors = [e for e in root.iterfind("error") if not text_of(e, "kind").startswith("Leak_")]
    info["other_errors"] = len(other_errors)
    if (heap := root.find("heap_summary")) is not None:
        info["heap_summary"] = {
            "in_use_bytes": int_of(heap, "memory_in_use_at_exit/bytes", "heap_summary"),
            "in_use_blocks": int_of(heap, "memory_in_use_at_exit/blocks", "heap_summary"),
            "allocs": int_of(heap, "total_heap_usage/allocs", "heap_summary"),
            "frees": int_of(heap, "total_heap_usage/frees", "heap_summary"),
            "bytes_allocated": int_of(heap, "total_heap_usage/bytes_allocated", "heap_summary"),
        }
    if (errors := root.find("error_summary")) is not None:
        info["errors"] = int_of(errors, "errors", "error_summary")
    if (signal := root.find("fatal_signal")) is not None:
        info["fatal_signal"] = fatal_signal(signal)
    return info


def fatal_signal(signal: ET.Element) -> dict[str, object]:
    """`<fatal_signal>`: the signal the process died of (its number and name), what happened
    (`<event>`, at `<siaddr>`) and where (its stack), as the text log's "Process terminating
    with default action of signal 11 (SIGSEGV)" and the lines after it say it."""
    event, address = text_of(signal, "event"), text_of(signal, "siaddr")
    found: dict[str, object] = {
        "number": int_of(signal, "signo", "fatal_signal"),
        "name": text_of(signal, "signame"),
        "frames": [valgrind_frame(frame).display() for frame in signal.iterfind("stack/frame")],
    }
    if event:
        found["event"] = f"{event} at address {address}" if address else event
    return found


def split_into_checks(root: ET.Element, info: dict[str, object]) -> list[LeakReport]:
    """The run's leak checks in document order: loss records numbered 1..N, each check closed
    by its `<leak_summary>` (protocol 6); a client request (VALGRIND_DO_LEAK_CHECK) can run
    more, each numbering from 1 again. A run without any is one clean check."""
    process = f"pid {text_of(root, 'pid')}" if text_of(root, "pid") else ""
    reports: list[LeakReport] = []
    open_check = False  # the last report may take more records
    last_index = None
    seen = {"error": 0, "leak_summary": 0}  # elements of each tag so far, for paths
    for element in root:
        if element.tag not in seen:
            continue
        position = seen[element.tag]
        seen[element.tag] += 1
        if element.tag == "leak_summary":
            if not open_check:
                reports.append(LeakReport(tool=VALGRIND, process=process, info=dict(info)))
            where = f"leak_summary[{position}]"
            stated_totals(reports[-1], summary_kinds(element, where))
            check_kind_totals(reports[-1], where)
            check_report_totals(reports[-1], where)
            open_check, last_index = False, None
            continue
        if not (kind := text_of(element, "kind")).startswith("Leak_"):
            continue
        path = f"error[{position}]"
        record, index, of = leak_record(element, kind, path)
        if not open_check or last_index is None or index <= last_index:
            reports.append(LeakReport(tool=VALGRIND, process=process, info=dict(info)))
            open_check = True
        report = reports[-1]
        if report.stated_records is not None and report.stated_records != of:
            raise InvalidUpload(
                f"loss record {index} of {of}, but the records before it count "
                f"{report.stated_records}",
                f"{path}.xwhat.text",
            )
        report.stated_records = of
        report.records.append(record)
        last_index = index
    if not reports:  # ran clean, or no leak check
        reports.append(LeakReport(tool=VALGRIND, process=process, info=dict(info)))
        if text_of(root, "all_heap_blocks_freed") == "true":
            stated_totals(reports[-1], {})
        else:  # protocol 4 or 5: no totals, and no record to count; not "0 leaks"
            reports[-1].info["leak_check"] = NOTHING_LISTED
    for report in reports:
        if report.listed_records > (report.stated_records or 0):
            raise InvalidUpload(
                f"{report.listed_records} loss records listed, more than the "
                f"{report.stated_records} valgrind counted",
                "valgrindoutput.error",
            )
    return reports


def summary_kinds(summary: ET.Element, where: str) -> dict[str, tuple[int, int]]:
    """`<leak_summary>`: bytes and blocks (`in_blocks`; `blocks` read too) of each kind."""
    kinds: dict[str, tuple[int, int]] = {}
    for name, kind in SUMMARY_KINDS.items():
        element = summary.find(name)
        if element is None:
            continue
        blocks = "in_blocks" if element.find("in_blocks") is not None else "blocks"
        kinds[kind] = (
            int_of(element, "bytes", f"{where}.{name}"),
            int_of(element, blocks, f"{where}.{name}"),
        )
    return kinds


def leak_record(error: ET.Element, kind: str, path: str) -> tuple[LeakRecord, int, int]:
    if kind not in _KINDS:
        raise InvalidUpload(f"unknown leak kind {kind!r}", f"{path}.kind")
    text = text_of(error, "xwhat/text")
    match = LOSS_RECORD.match(text)
    if match is None:
        raise InvalidUpload(
            f"expected `N bytes in M blocks are … in loss record i of n`, found {text[:120]!r}",
            f"{path}.xwhat.text",
        )
    leaked_bytes = int_of(error, "xwhat/leakedbytes", f"{path}.xwhat")
    leaked_blocks = int_of(error, "xwhat/leakedblocks", f"{path}.xwhat")
    indirect = parse_int(match["indirect"]) if match["indirect"] else 0
    direct = parse_int(match["direct"]) if match["direct"] else leaked_bytes - indirect
    if parse_int(match["bytes"]) != leaked_bytes or direct + indirect != leaked_bytes:
        raise InvalidUpload(
            f"leakedbytes {leaked_bytes} does not match the text {text!r}",
            f"{path}.xwhat.leakedbytes",
        )
    if parse_int(match["blocks"]) != leaked_blocks:
        raise InvalidUpload(
            f"leakedblocks {leaked_blocks} does not match the text {text!r}",
            f"{path}.xwhat.leakedblocks",
        )
    record = LeakRecord(
        kind=_KINDS[kind],
        bytes=direct,
        allocations=leaked_blocks,
        frames=[valgrind_frame(frame) for frame in error.iterfind("stack/frame")],
        size=direct // leaked_blocks if leaked_blocks and direct % leaked_blocks == 0 else None,
        detail={
            "valgrind_kind": kind,
            "leakedbytes": leaked_bytes,
            "indirect_bytes": indirect,
            "text": text,
            "unique": text_of(error, "unique"),
        },
    )
    return record, parse_int(match["index"]), parse_int(match["of"])


def valgrind_frame(frame: ET.Element) -> StackFrame:
    ip = text_of(frame, "ip")
    directory, file = text_of(frame, "dir"), text_of(frame, "file")
    line = text_of(frame, "line")
    return StackFrame(
        symbol=text_of(frame, "fn"),
        image=text_of(frame, "obj"),
        address=int(ip, 16) if re.fullmatch(r"0x[0-9a-fA-F]+", ip) else None,
        file=f"{directory}/{file}" if directory and file else file,
        line=whole_number(line, 2**31 - 1),
    )


def text_of(element: ET.Element, path: str) -> str:
    found = element.find(path)
    return (found.text or "").strip() if found is not None else ""


def int_of(element: ET.Element, path: str, where: str) -> int:
    """A count, as valgrind prints it: `64146`, or with thousands separators (`64,146`, as
    protocol 6's `<heap_summary>` and `<leak_summary>` print theirs)."""
    text = text_of(element, path)
    value = whole_number(text.replace(",", "")) if THOUSANDS.fullmatch(text) else None
    if value is None:
        raise InvalidUpload(
            f"expected a count below 2^63, found {text[:40]!r}", f"{where}.{path.split('/')[-1]}"
        )
    return value
