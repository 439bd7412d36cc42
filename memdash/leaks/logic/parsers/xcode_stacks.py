"""The allocation stacks of Xcode's `leaks`, printed when the process ran with MallocStackLogging
(pure: no Django).

```
STACK OF 1 INSTANCE OF 'ROOT LEAK: <HomeViewModel>':
[thread 0x7fffa6f8b380]:
24  Chat            0x10a48606f main + 63  AppDelegate.swift:11
10  Chat            0x10000a02d 0x100000000 + 41005
3   Chat            0x10a480309 HomeViewModel.__allocating_init() + 25  LeaksExampleVC.swift:0
0   libsystem_malloc.dylib  0x7ff8176d09d9 _malloc_zone_malloc_instrumented_or_legacy + 115
====
    1 (48 bytes) ROOT LEAK: <HomeViewModel 0x7f89e4e65c60> [48]
```

Frames run from the outermost (the highest number) to the allocation (0); each is the image, the
address and `symbol + offset into it`, with the source's `File.swift:line` when the image has its
debug information. A frame leaks could not name reads `0x100000000 + 41005`: the image's load
address and the offset into the image, which a debug file of that image names later
(`Binary Images:` gives each image's UUID and load address).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from memdash.core.logic.errors import InvalidUpload
from memdash.leaks.logic.reports import StackFrame

STACK_HEAD = re.compile(
    r"^STACK OF (?P<count>\d+) INSTANCES? OF '(?P<root>ROOT LEAK|ROOT CYCLE): <(?P<label>.*)>':\s*$"
)
SEPARATOR = re.compile(r"^={4,}\s*$")
BINARY_IMAGES = re.compile(r"^Binary Images:\s*$")
_THREAD = re.compile(r"^\[thread (0x[0-9a-fA-F]+)\]:\s*$")
_FRAME = re.compile(
    r"^(?P<depth>\d+)\s+(?P<image>\S+)\s+(?P<address>0x[0-9a-fA-F]+)\s+(?P<rest>.+?)\s*$"
)
_LOCATION = re.compile(
    r"^(?P<symbol>.*?)(?: \+ (?P<offset>\d+))?(?:\s{2,}(?P<file>\S.*?):(?P<line>\d+))?$"
)
_ADDRESS = re.compile(r"^0x[0-9a-fA-F]+$")
_IMAGE = re.compile(
    r"^\s*(?P<start>0x[0-9a-fA-F]+)\s+-\s+(?:0x[0-9a-fA-F]+|\?\?\?)\s+\+?(?P<name>\S+)\s+"
    r"(?:\([^)]*\)\s+)?<(?P<uuid>[0-9A-Fa-f-]{32,36})>\s*(?P<path>.*?)\s*$"
)


@dataclass
class StackBlock:
    """One `STACK OF N INSTANCES` block: the stack its instances were allocated from."""

    line: int
    instances: int
    root: str
    label: str
    thread: str = ""
    frames: list[tuple[int, StackFrame]] = field(default_factory=list)  # (depth, frame)
    closed: bool = False  # its `====` was read: tree lines follow

    def stack(self) -> list[StackFrame]:
        """Innermost first, as every leak record's stack."""
        return [frame for _depth, frame in sorted(self.frames, key=lambda item: item[0])]


@dataclass(frozen=True)
class BinaryImage:
    name: str
    load_address: int
    uuid: str
    path: str


def parse_frame(line: str, number: int) -> tuple[int, StackFrame] | None:
    """`depth image 0xaddress symbol + offset  File.swift:line`; None for another line."""
    match = _FRAME.match(line)
    if match is None:
        return None
    location = _LOCATION.match(match["rest"])
    assert location is not None  # the pattern takes any text
    symbol, image = location["symbol"].strip(), match["image"]
    address = int(match["address"], 16)
    offset = int(location["offset"]) if location["offset"] else None
    if _ADDRESS.match(symbol):  # `0x100000000 + 41005`: the image's load address, an offset
        return int(match["depth"]), StackFrame(image=image, address=address, offset=offset)
    file, line_number = location["file"] or "", location["line"]
    if not symbol:
        raise InvalidUpload(
            f"a stack frame without a symbol: {line.strip()[:80]!r}", f"line {number}"
        )
    return int(match["depth"]), StackFrame(
        symbol=symbol, image=image, address=address, file=file,
        line=int(line_number) if line_number is not None and file else None,
    )  # fmt: skip


def parse_image(line: str) -> BinaryImage | None:
    match = _IMAGE.match(line)
    if match is None:
        return None
    return BinaryImage(match["name"], int(match["start"], 16), match["uuid"], match["path"])


def name_images(frames: list[StackFrame], images: list[BinaryImage]) -> list[StackFrame]:
    """Frames leaks could not name get their image's UUID (and, when it printed the absolute
    address only, the offset from its load address), so that a debug file of that image names
    them as it names every other frame."""
    by_name: dict[str, BinaryImage] = {}
    for image in images:
        by_name.setdefault(image.name, image)
        by_name.setdefault(image.path.rsplit("/", 1)[-1], image)
    named = []
    for frame in frames:
        found = by_name.get(frame.image)
        if frame.symbol or found is None:
            named.append(frame)
            continue
        image, offset = found, frame.offset
        if offset is None and frame.address is not None and frame.address >= image.load_address:
            offset = frame.address - image.load_address
        named.append(replace(frame, build_id=image.uuid, offset=offset))
    return named


def take_stack_line(block: StackBlock, line: str, number: int) -> None:
    """A line of a block before its `====`: the thread, or a frame."""
    if match := _THREAD.match(line):
        block.thread = match[1]
        return
    frame = parse_frame(line, number)
    if frame is None:
        raise InvalidUpload(
            "expected a stack frame (`depth image 0xaddress symbol + offset`) or the `====` "
            f"that ends the stack of the block at line {block.line}, got {line.strip()[:80]!r}",
            f"line {number}",
        )
    block.frames.append(frame)
