"""LeakCanary's heap analyses as it prints them (pure: no Django): `HeapAnalysisSuccess`'s
`toString()` (what its docs show being sent to a backend, and what it logs to Logcat), and
`shark-cli analyze`'s output, the same text. One upload may hold many analyses, also as a Logcat
dump (`D/LeakCanary: …` lines, other tags ignored).

```
====================================
HEAP ANALYSIS RESULT
====================================
1 APPLICATION LEAKS
…
44730 bytes retained by leaking objects
Displaying only 1 leak trace out of 2 with the same signature
Signature: 442f3a7295abb8db4c32672ff17a43941effe5d0
┬───
│ GC Root: Input or output parameters in native code
│
├─ androidx.fragment.app.Fragment[] array
│    Leaking: UNKNOWN
│    Retaining 2.1 kB in 69 objects
│    ↓ Fragment[0]
│              ~~~
╰→ android.com.java.profilertester.fragment.FragmentA instance
     Leaking: YES (ObjectWatcher was watching this because …)
     Retaining 42.7 kB in 756 objects
====================================
0 LIBRARY LEAKS
…
====================================
METADATA
…
LeakCanary version: 2.11
```

Each leak (one signature: the leak traces caused by one bug) becomes a `Leak`: application or
library (a known bug of 3rd-party code: its `Leak pattern` and `Description`), its retained bytes
(`N bytes retained by leaking objects`, over its traces), how many traces share it, and the trace
shown: the GC root, then each object with its `Leaking:` verdict and reason, what it retains, its
labels and the reference to the next, `~~~` marking the references likely to cause the leak.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memdash.core.logic.errors import InvalidUpload
from memdash.leaks.logic.parsers.common import decode_lines, head_text, last_line

_RULE = re.compile(r"^={20,}\s*$")
_RESULT, _FAILED = "HEAP ANALYSIS RESULT", "HEAP ANALYSIS FAILED"
_SECTION = re.compile(
    r"^(?P<count>\d+) (?P<kind>APPLICATION LEAKS?|LIBRARY LEAKS?|UNREACHABLE OBJECTS?)\s*$"
)
_RETAINED = re.compile(r"^(?P<bytes>\d+) bytes retained by leaking objects\s*$")
_DISPLAYING = re.compile(
    r"^Displaying only 1 leak trace out of (?P<count>\d+) with the same "
    r"(?:signature|leak fingerprint)\s*$"
)
_SIGNATURE = re.compile(r"^(?:Signature|Leak fingerprint): (?P<signature>[0-9a-fA-F]{8,64})\s*$")
_PATTERN = re.compile(r"^Leak pattern: (?P<pattern>.*?)\s*$")
_DESCRIPTION = re.compile(r"^Description: (?P<text>.*?)\s*$")
_TRACE_START = re.compile(r"^┬─+\s*$")
_GC_ROOT = re.compile(r"^│\s*GC Root: (?P<root>.*?)\s*$")
_NODE = re.compile(r"^(?P<mark>├─|╰→) (?P<cls>.+?) (?P<type>instance|class|array)\s*$")
_DETAIL = re.compile(r"^(?:│| )\s{2,}(?P<text>.*?)\s*$")
_LEAKING = re.compile(r"^Leaking: (?P<verdict>YES|NO|UNKNOWN)(?: (?P<reason>\(.*))?$")
_RETAINING = re.compile(r"^Retaining (?P<size>[\d.,]+ ?[kMG]?B) in (?P<objects>\d+) objects?$")
_REFERENCE = re.compile(r"^↓ (?P<reference>.+?)$")
_UNDERLINE = re.compile(r"^~+$")
_METADATA = re.compile(r"^(?P<key>[^:]{1,60}): (?P<value>.*?)\s*$")
# Logcat's prefixes (brief and threadtime) of LeakCanary's lines: a Logcat dump is read through
# them, its other tags' lines left out.
_LOGCAT = re.compile(
    r"^(?:[VDIWEFA]/LeakCanary(?:\(\s*\d+\))?: ?"
    r"|\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\s+\d+\s+\d+ [VDIWEFA] LeakCanary\s*: ?)"
)
_LOGCAT_OTHER = re.compile(
    r"^(?:[VDIWEFA]/[^:(]+(?:\(\s*\d+\))?: |\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\s+\d+\s+\d+ [VDIWEFA] )"
)
_UNITS = {"B": 1, "kB": 1000, "MB": 1000**2, "GB": 1000**3}  # LeakCanary counts in SI units
DETECT = re.compile(
    r"HEAP ANALYSIS (?:RESULT|FAILED)|^\s*(?:[VDIWEFA]/LeakCanary\S*: ?)?┬───", re.MULTILINE
)
# LeakCanary's explanations under its headings: no leak's.
BOILERPLATE = frozenset(
    {
        'References underlined with "~~~" are likely causes.',
        "Learn more at https://squ.re/leaks.",
        "A Library Leak is a leak caused by a known bug in 3rd party code that you do not have "
        "control over.",
        "See https://square.github.io/leakcanary/fundamentals-how-leakcanary-works/"
        "#4-categorizing-leaks",
        "An unreachable object is still in memory but LeakCanary could not find a strong "
        "reference path",
        "from GC roots.",
        "Please include this in bug reports and Stack Overflow questions.",
    }
)
APPLICATION, LIBRARY = "application", "library"
YES, NO, UNKNOWN = "YES", "NO", "UNKNOWN"


@dataclass(slots=True)
class TraceObject:
    """One object of a leak trace."""

    cls: str
    type: str  # instance, class, array
    line: int
    verdict: str = ""  # YES, NO, UNKNOWN ("" when LeakCanary printed none)
    reason: str = ""
    retained: str = ""  # as printed, `2.2 kB`
    retained_objects: int | None = None
    labels: list[str] = field(default_factory=list)
    reference: str = ""  # to the next object of the trace; "" on the leaking object
    suspect: bool = False  # the reference is underlined with ~~~: a likely cause
    reason_open: bool = False  # the reason's parenthesis runs on to the next line (wrapped)

    @property
    def retained_bytes(self) -> int | None:
        """What `retained` says, in bytes (LeakCanary rounds it to one decimal, SI units)."""
        match = re.match(r"^([\d.,]+) ?([kMG]?B)$", self.retained)
        if match is None:
            return None
        return round(float(match[1].replace(",", ".")) * _UNITS[match[2]])


@dataclass(slots=True)
class Leak:
    """One leak signature of an analysis, with the trace LeakCanary showed for it."""

    category: str  # application or library
    line: int
    signature: str = ""
    retained_bytes: int | None = None  # over its traces, as LeakCanary states it
    traces: int = 1  # leak traces with this signature (LeakCanary shows one)
    pattern: str = ""  # a library leak's `Leak pattern:`
    description: str = ""
    gc_root: str = ""
    objects: list[TraceObject] = field(default_factory=list)
    ended: bool = False  # its leaking object (`╰→`) was read

    @property
    def leaking(self) -> TraceObject | None:
        return self.objects[-1] if self.objects else None

    @property
    def suspects(self) -> list[str]:
        return [o.reference for o in self.objects if o.suspect]

    @property
    def title(self) -> str:
        """The leaking object's class and the first reference likely to hold it."""
        leaking = self.leaking
        name = leaking.cls.rsplit(".", 1)[-1] if leaking else "leak"
        return f"{name} via {self.suspects[0]}" if self.suspects else name


@dataclass
class Analysis:
    line: int
    stated: dict[str, int] = field(default_factory=dict)  # per category, as its heading says
    leaks: list[Leak] = field(default_factory=list)
    unreachable: list[str] = field(default_factory=list)  # the section's lines, as printed
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass
class LeakCanaryText:
    analyses: list[Analysis] = field(default_factory=list)
    failed: int = 0  # `HEAP ANALYSIS FAILED`: counted, nothing to store


def looks_like(raw: bytes) -> bool:
    return bool(DETECT.search(head_text(raw)))


def logcat_lines(lines: list[str]) -> list[tuple[int, str]]:
    """(line number, text) of the lines to read: LeakCanary's own, out of a Logcat dump."""
    numbered = list(enumerate(lines, start=1))
    if not any(_LOGCAT.match(text) for _n, text in numbered):
        return [(n, text.rstrip()) for n, text in numbered]
    return [
        (n, _LOGCAT.sub("", text, count=1).rstrip())
        for n, text in numbered
        if _LOGCAT.match(text) or not _LOGCAT_OTHER.match(text) and not text.strip()
    ]


def parse(raw: bytes) -> LeakCanaryText:
    lines = decode_lines(raw)
    parser = _Parser()
    for number, text in logcat_lines(lines):
        parser.take(text, number)
    return parser.finish(last_line(lines))


class _Parser:
    def __init__(self) -> None:
        self.result = LeakCanaryText()
        self.analysis: Analysis | None = None
        self.section = ""  # application, library, unreachable, metadata, failed
        self.section_line = 0
        self.leak: Leak | None = None
        self.node: TraceObject | None = None
        self.in_description = False

    def take(self, text: str, number: int) -> None:
        stripped = text.strip()
        if _RULE.match(stripped):
            self.close_leak(number)
            if self.section == "failed":
                self.section = ""
            return
        if stripped in (_RESULT, _FAILED):
            self.close_analysis(number)
            if stripped == _FAILED:
                self.result.failed += 1
                self.section = "failed"
            else:
                self.analysis = Analysis(number)
            return
        if self.section == "failed" or stripped in BOILERPLATE:
            return
        if match := _SECTION.match(stripped):
            self.open_section(match, number)
        elif stripped == "METADATA":
            self.close_leak(number)
            self.check_section(number)
            self.section, self.section_line = "metadata", number
        elif self.section == "metadata":
            if match := _METADATA.match(stripped):
                self.current(number).metadata[match["key"]] = match["value"]
        elif self.section == "unreachable":
            if stripped:
                self.current(number).unreachable.append(stripped)
        else:
            self.take_leak_line(text, stripped, number)

    def current(self, number: int) -> Analysis:
        if self.analysis is None:  # a pasted part: its own analysis
            self.analysis = Analysis(number)
        return self.analysis

    def open_section(self, match: re.Match[str], number: int) -> None:
        self.close_leak(number)
        self.check_section(number)
        analysis = self.current(number)
        kind = match["kind"].split()[0]
        self.section = {"APPLICATION": APPLICATION, "LIBRARY": LIBRARY}.get(kind, "unreachable")
        self.section_line = number
        analysis.stated[self.section] = int(match["count"])

    def check_section(self, number: int) -> None:
        """The leaks a section's heading announces all follow it."""
        analysis = self.analysis
        if analysis is None or self.section not in (APPLICATION, LIBRARY):
            return
        found = sum(1 for leak in analysis.leaks if leak.category == self.section)
        stated = analysis.stated.get(self.section, found)
        if found != stated:
            raise InvalidUpload(
                f"the heading announces {stated} {self.section} leak"
                f"{'s' if stated != 1 else ''}, {found} follow it: the analysis was cut or "
                "mangled; send it whole",
                f"line {self.section_line}",
            )

    def take_leak_line(self, text: str, stripped: str, number: int) -> None:
        if self.leak is not None and self.leak.signature and self.take_trace_line(text, number):
            return
        if match := _PATTERN.match(stripped):
            self.start_leak(number, LIBRARY).pattern = match["pattern"]
        elif match := _DESCRIPTION.match(stripped):
            self.start_leak(number, LIBRARY).description = match["text"]
            self.in_description = True
        elif match := _RETAINED.match(stripped):
            self.start_leak(number).retained_bytes = int(match["bytes"])
            self.in_description = False
        elif match := _DISPLAYING.match(stripped):
            self.start_leak(number).traces = int(match["count"])
            self.in_description = False
        elif match := _SIGNATURE.match(stripped):
            self.start_leak(number).signature = match["signature"].lower()
            self.in_description = False
        elif self.in_description and self.leak is not None and stripped:
            self.leak.description += " " + stripped
        elif _TRACE_START.match(stripped) and self.leak is None:
            self.start_leak(number)  # a trace pasted without its heading lines
            self.take_trace_line(text, number)
        elif stripped.startswith(("│", "├─", "╰→", "┬")):
            raise InvalidUpload(
                "a leak trace line without its leak: a trace follows its `Signature:` line",
                f"line {number}",
            )

    def start_leak(self, number: int, category: str = "") -> Leak:
        """The leak these heading lines are about: a new one after a finished trace."""
        leak = self.leak
        if leak is None or leak.objects or leak.signature:
            self.close_leak(number)
            section = self.section if self.section in (APPLICATION, LIBRARY) else APPLICATION
            leak = Leak(category or section, number)
            self.leak = leak
        if category:
            leak.category = category
        return leak

    def take_trace_line(self, text: str, number: int) -> bool:
        """A line of the leak's trace; False for a line that is not one (the next leak)."""
        leak = self.leak
        assert leak is not None
        stripped = text.strip()
        if _TRACE_START.match(stripped):
            return not leak.objects
        if match := _GC_ROOT.match(stripped):
            leak.gc_root = match["root"]
            return True
        if match := _NODE.match(stripped):
            if leak.ended:
                raise InvalidUpload("a trace goes on after its leaking object", f"line {number}")
            self.node = TraceObject(match["cls"], match["type"], number)
            leak.objects.append(self.node)
            leak.ended = match["mark"] == "╰→"
            return True
        if stripped == "│":
            return True
        detail = _DETAIL.match(text)
        if detail is None or self.node is None:
            return False
        take_detail(self.node, detail["text"], number)
        return True

    def close_leak(self, number: int) -> None:
        leak, self.leak, self.node, self.in_description = self.leak, None, None, False
        if leak is None:
            return
        if not leak.signature:
            raise InvalidUpload(
                "a leak without its `Signature:` line (LeakCanary prints one above each trace)",
                f"line {leak.line}",
            )
        if not leak.ended:
            raise InvalidUpload(
                f"the leak trace of signature {leak.signature} is cut off before its leaking "
                "object (`╰→ … instance`)",
                f"line {number}",
            )
        self.current(leak.line).leaks.append(leak)

    def close_analysis(self, number: int) -> None:
        self.close_leak(number)
        self.check_section(number)
        if self.analysis is not None:
            self.result.analyses.append(self.analysis)
        self.analysis, self.section = None, ""

    def finish(self, last: int) -> LeakCanaryText:
        self.close_analysis(last)
        if not self.result.analyses:
            what = "only failed analyses" if self.result.failed else "no leak trace"
            raise InvalidUpload(
                f"LeakCanary output with {what}: expected `HEAP ANALYSIS RESULT` and its leaks",
                f"line {last}",
            )
        return self.result


def take_detail(node: TraceObject, text: str, number: int) -> None:
    """A line under an object: its verdict (a reason may run over several lines when Logcat
    wrapped it), what it retains, the reference to the next object and its `~~~`, a label."""
    if node.reason_open:
        node.reason += " " + text
        node.reason_open = _unbalanced(node.reason)
        if not node.reason_open:
            node.reason = _inside(node.reason)
        return
    if match := _LEAKING.match(text):
        node.verdict = match["verdict"]
        raw = match["reason"] or ""
        node.reason_open = _unbalanced(raw)
        node.reason = raw if node.reason_open else _inside(raw)
    elif match := _RETAINING.match(text):
        node.retained, node.retained_objects = match["size"], int(match["objects"])
    elif match := _REFERENCE.match(text):
        node.reference = match["reference"]
    elif _UNDERLINE.match(text):
        if not node.reference:
            raise InvalidUpload("a `~~~` underline with no reference above it", f"line {number}")
        node.suspect = True
    else:
        node.labels.append(text)


def _unbalanced(text: str) -> bool:
    return text.count("(") > text.count(")")


def _inside(text: str) -> str:
    """`(reason (with parentheses))` → `reason (with parentheses)`."""
    return text[1:-1] if text.startswith("(") and text.endswith(")") else text
