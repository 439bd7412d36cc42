"""Naming the frames of a leak's stack from debug files (pure: no Django).

Tools print a frame they could not name as its module and offset, and the module's build id
(LeakSanitizer's `(libchat.so+0x1a2b) (BuildId: …)`, malloc_debug's `#01 pc 0001a2b
libchat.so (BuildId: …)`). A debug file of that build id names it as llvm-symbolizer would
have: the function, its file and line, and each call inlined there as a frame of its own just
before it (stacks are innermost first), marked inlined. The frame keeps its module, offset and
address, so that the page still says where it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memdash.allocations.logic.symbolicate import Location, Resolver
from memdash.leaks.logic.reports import StackFrame


def needs_name(frame: StackFrame) -> bool:
    """A frame a debug file can name: no name, an offset in a module with a build id."""
    return not frame.symbol and frame.offset is not None and bool(frame.build_id)


def image_ids(frames: Iterable[StackFrame]) -> set[str]:
    """The build ids of the modules that frames without a name are in."""
    return {frame.build_id for frame in frames if needs_name(frame)}


def name_frames(frames: Sequence[StackFrame], resolve: Resolver) -> list[StackFrame] | None:
    """The stack with the frames `resolve` knows named (innermost first, as tools print it);
    None when it names none of them."""
    named: list[StackFrame] = []
    changed = False
    for frame in frames:
        places: Sequence[Location] = ()
        if needs_name(frame) and frame.offset is not None:
            places = resolve(frame.build_id, frame.offset)
        if not places:
            named.append(frame)
            continue
        changed = True
        for place in reversed(places):  # the resolver answers outermost first
            named.append(
                StackFrame(
                    symbol=place.function, image=frame.image, address=frame.address,
                    offset=frame.offset, file=place.file, line=place.line,
                    build_id=frame.build_id, inlined=place.inlined,
                )
            )  # fmt: skip
    return named if changed else None
