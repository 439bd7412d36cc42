"""The frames a memory monitor's own recording puts in the stacks it records, dropped before the
stacks are keyed, so that one code path is one path whichever monitor recorded it (plain data, no
Django).

The iOS monitors that hook Objective-C allocation do it by swizzling `+[NSObject alloc]`, so
every object allocated in a process with one installed is allocated through the hook, and any
stack recorded there (by the monitor itself or by another recorder in the same process) has the
hook's frame between the code that asked for the object and the allocator, followed by the
runtime frames the hook calls the original `alloc` through:

- WeChat Matrix (WCMemoryStat, `nsobject_hook.mm`): `+[NSObject(ObjectEventLogging)
  event_logging_alloc]`, exchanged with `+alloc` by `nsobject_hook_alloc_method()`; Matrix's own
  report skips this frame when it picks a stack's responsible caller
  (`memory_report_generator.cpp`: "skip the method of +[NSObject event_logging_alloc] which hook
  by me"). Any category name is taken, as apps that vendor Matrix rename it;
- FBAllocationTracker (`NSObject+FBAllocationTracker.mm`): `+[NSObject(FBAllocationTracker)
  fb_newAlloc]`, which calls the original through `fb_originalAlloc`. FBMemoryProfiler records
  through FBAllocationTracker and adds no hook of its own.

The rule drops such a hook frame and, below it (towards the allocation), the Objective-C
runtime's allocation frames it reaches the allocator through (`+[NSObject alloc]`,
`_objc_rootAlloc`, `_objc_rootAllocWithZone`, …), up to the first frame that is neither: the
allocation is then the caller's, straight into the allocator, as in the same code's stacks
recorded without a hook. Runtime frames not below a hook stay. A frame is recognised by its
name, so an unnamed hook frame (Matrix writes image + offset) is dropped once a debug file names
it: the job that applies debug files to stored snapshots runs this rule too.

The rule is per format (the formats whose stacks come from such processes) and has a version,
`RECORDING_RULE`, stored with each snapshot (`Snapshot.recording_rule`): a snapshot stored under
an older one is keyed again by memdash.allocations.writes.resymbolicate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memdash.allocations.logic.document.parse import ParsedSnapshot
from memdash.allocations.logic.symbolicate import move_rows

# The version of the rule below; raise it when a format's frames change, and the stored
# snapshots are keyed again. 0: nothing was dropped; 1: the iOS allocation hooks.
RECORDING_RULE = 1

# The Objective-C runtime's allocation path, as a hook calls the original `alloc` through it
# (objc4: NSObject.mm, objc-runtime-new.mm).
OBJC_ALLOCATION = frozenset(
    {
        "+[NSObject alloc]", "+[NSObject allocWithZone:]", "objc_alloc", "objc_alloc_init",
        "objc_allocWithZone", "_objc_rootAlloc", "_objc_rootAllocWithZone", "callAlloc",
        "class_createInstance", "_class_createInstance", "_class_createInstanceFromZone",
        "objc_msgSend",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Rule:
    """What a format's recording adds: the hooks (by name), and the frames dropped below one."""

    hooks: re.Pattern[str]
    below_hook: frozenset[str] = OBJC_ALLOCATION


IOS_ALLOCATION_HOOKS = Rule(
    re.compile(
        r"\+\[NSObject\([^)]*\) event_logging_alloc\]"  # Matrix
        r"|\+\[NSObject\(FBAllocationTracker\) fb_(?:new|original)Alloc\]"  # FBAllocationTracker
    )
)
# Per source format (`Snapshot.source_format`): the formats whose stacks are recorded in iOS
# processes. Formats without an entry have no recording frames.
RULES: dict[str, Rule] = {
    "matrix": IOS_ALLOCATION_HOOKS,
    "memdash.snapshot": IOS_ALLOCATION_HOOKS,
}


def drop_recording_frames(parsed: ParsedSnapshot, source_format: str) -> int:
    """Drop the format's recording frames from the stacks (in place): a dropped node's children
    hang from its parent, nodes that then share a parent and frame are one, and rows on a dropped
    node are its parent's (none: no stack). Returns how many stack nodes were dropped (0: the
    stacks are as they were)."""
    rule = RULES.get(source_format)
    if rule is None:
        return 0
    hooks = {i for i, f in enumerate(parsed.frames) if f.symbol and rule.hooks.fullmatch(f.symbol)}
    if not hooks:
        return 0
    runtime = {i for i, f in enumerate(parsed.frames) if f.symbol in rule.below_hook}
    parents: list[int | None] = []
    frames: list[int] = []
    placed: dict[tuple[int | None, int], int] = {}
    remap: list[int | None] = []  # where each old node went (None: no stack left)
    hooked: list[bool] = []  # the old node is a hook or the runtime below one
    dropped = 0
    for parent, frame in zip(parsed.stack_parents, parsed.stack_frames, strict=True):
        above = remap[parent] if parent is not None else None
        drop = frame in hooks or (frame in runtime and parent is not None and hooked[parent])
        hooked.append(drop)
        if drop:
            remap.append(above)
            dropped += 1
            continue
        node = placed.get((above, frame))
        if node is None:
            node = placed[(above, frame)] = len(parents)
            parents.append(above)
            frames.append(frame)
        remap.append(node)
    if dropped:
        parsed.stack_parents, parsed.stack_frames = parents, frames
        move_rows(parsed, remap)
    return dropped
