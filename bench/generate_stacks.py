"""Images, frames and the call-stack prefix tree of bench/generate.py.

Frames mix the three forms devices send (symbolicated strings, symbol+image+address objects,
bare image+address objects); the tree shares its outer frames (start → main → run loop → …)
the way real stacks do, and its allocation sites are what the rows and events point at.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from generate_names import (
    APP_IMAGES,
    CLASS_PREFIXES,
    CLASS_WORDS_1,
    CLASS_WORDS_2,
    SELECTORS,
    SYSTEM_CLASSES,
    SYSTEM_IMAGES,
)
from generate_sizes import zipf_cum_weights

# ---------------------------------------------------------------------------------------------
# Images and frames


@dataclass
class FramePools:
    roots: list[int]  # outermost frames (start, main, UIApplicationMain, run loop, thread start)
    middle: list[int]  # app and framework frames
    allocators: list[int]  # innermost frames (malloc, objc_alloc, swift_allocObject, …)


def make_images(rng: random.Random) -> list[dict[str, Any]]:
    images: list[dict[str, Any]] = []
    load = 0x100000000
    for name in APP_IMAGES:
        images.append({"name": name, "uuid": uuid_like(rng), "load_address": hex(load)})
        load += 0x400000 * rng.randint(1, 8)
    system_load = 0x180000000
    for name in SYSTEM_IMAGES:
        images.append(
            {
                "name": name,
                "uuid": uuid_like(rng),
                "load_address": hex(system_load),
                "system": True,
            }
        )
        system_load += 0x1000000 * rng.randint(1, 4)
    return images


def uuid_like(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032X}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def image_index(name: str) -> int:
    return (APP_IMAGES + SYSTEM_IMAGES).index(name)


def make_frames(
    rng: random.Random, images: list[dict[str, Any]], count: int
) -> tuple[list[Any], FramePools]:
    frames: list[Any] = []
    pools = FramePools(roots=[], middle=[], allocators=[])

    def add(frame: Any, pool: list[int]) -> None:
        pool.append(len(frames))
        frames.append(frame)

    def system_frame(symbol: str, image: str) -> dict[str, Any]:
        i = image_index(image)
        base = int(images[i]["load_address"], 16)
        return {"symbol": symbol, "image": i, "address": hex(base + 4 * rng.randint(64, 1 << 20))}

    add(system_frame("start", "dyld"), pools.roots)
    add(system_frame("_pthread_start", "libsystem_pthread.dylib"), pools.roots)
    add(system_frame("_dispatch_worker_thread2", "libdispatch.dylib"), pools.roots)
    add("main", pools.roots)
    add(system_frame("UIApplicationMain", "UIKitCore"), pools.roots)
    add(system_frame("GSEventRunModal", "GraphicsServices"), pools.roots)
    add(system_frame("CFRunLoopRunSpecific", "CoreFoundation"), pools.roots)
    add(system_frame("__CFRunLoopRun", "CoreFoundation"), pools.roots)
    add(system_frame("_dispatch_main_queue_drain", "libdispatch.dylib"), pools.roots)
    add(system_frame("_dispatch_client_callout", "libdispatch.dylib"), pools.roots)
    for symbol, image in [
        ("malloc", "libsystem_malloc.dylib"),
        ("_malloc_zone_malloc_instrumented_or_legacy", "libsystem_malloc.dylib"),
        ("calloc", "libsystem_malloc.dylib"),
        ("realloc", "libsystem_malloc.dylib"),
        ("malloc_zone_memalign", "libsystem_malloc.dylib"),
        ("_objc_rootAllocWithZone", "libobjc.A.dylib"),
        ("objc_alloc_init", "libobjc.A.dylib"),
        ("class_createInstance", "libobjc.A.dylib"),
        ("swift_allocObject", "libswiftCore.dylib"),
        ("swift_slowAlloc", "libswiftCore.dylib"),
        ("_CFRuntimeCreateInstance", "CoreFoundation"),
        ("operator new(unsigned long)", "libc++.1.dylib"),
        ("mach_vm_allocate", "IOKit"),
    ]:
        add(system_frame(symbol, image), pools.allocators)

    app_image_count = len(APP_IMAGES)
    while len(frames) < count:
        roll = rng.random()
        cls = f"{rng.choice(CLASS_PREFIXES)}{rng.choice(CLASS_WORDS_1)}{rng.choice(CLASS_WORDS_2)}"
        if roll < 0.40:  # already symbolicated by the device
            if rng.random() < 0.7:
                frame: Any = f"{rng.choice('-+')}[{cls} {rng.choice(SELECTORS)}]"
            else:
                frame = (
                    f"{rng.choice(APP_IMAGES)}.{cls}.{rng.choice(SELECTORS).rstrip(':')}() -> ()"
                )
            frames.append(frame)
        elif roll < 0.80:  # symbol + image + address
            i = rng.randrange(len(images))
            base = int(images[i]["load_address"], 16)
            if i < app_image_count:
                symbol = f"-[{cls} {rng.choice(SELECTORS)}]"
            else:
                symbol = f"{rng.choice(SYSTEM_CLASSES)}_{rng.choice(SELECTORS).rstrip(':')}"
            address: Any = base + 4 * rng.randint(64, 1 << 22)
            if rng.random() < 0.5:
                address = hex(address)
            frames.append({"symbol": symbol, "image": i, "address": address})
        else:  # not symbolicated: image + address only
            i = rng.randrange(len(images))
            base = int(images[i]["load_address"], 16)
            frames.append({"image": i, "address": hex(base + 4 * rng.randint(64, 1 << 22))})
        pools.middle.append(len(frames) - 1)
    return frames, pools


# ---------------------------------------------------------------------------------------------
# The stack prefix tree


@dataclass
class StackTree:
    nodes: list[list[Any]]  # [parent or None, frame]
    sites: list[int]  # nodes that allocate (leaves and some inner nodes)


ROOT_PATHS = [
    [0, 3, 4, 5, 6, 7, 8, 9],  # start, main, UIApplicationMain, GSEventRunModal, run loop, …
    [0, 3, 4, 5, 6, 7],
    [1, 2, 9],  # worker threads
    [1],
]


@dataclass(frozen=True)
class TreeShape:
    """How paths grow: leaf depths from a triangular law (low, high, mode), and where a new path
    branches off an existing one (a Beta law over the existing path's length: most of a stack
    is shared prefix by default)."""

    depth: tuple[float, float, float] = (5, 65, 18)
    max_depth: int = 64
    branch: tuple[float, float] = (2.5, 1.5)


# A service with many code paths (issue 36): deep chains that part early, so that ~50,000
# distinct stacks make ~1,000,000 stack nodes.
NODE_HEAVY = TreeShape(depth=(10, 90, 40), max_depth=96, branch=(2.0, 2.0))
SHARED = TreeShape()  # the default: an app's allocation stacks (bench/generate.py)


def make_stack_tree(
    rng: random.Random, node_count: int, pools: FramePools, shape: TreeShape = SHARED
) -> StackTree:
    """Grow a prefix tree: each new path branches off an existing path at some depth and runs
    down to a leaf depth (`shape`; by default between 5 and 64), ending in an allocator frame.
    Parents always come before their children, as the format requires."""
    nodes: list[list[Any]] = []
    paths: list[list[int]] = []
    middle = pools.middle
    middle_weights = zipf_cum_weights(len(middle), 0.8)  # hot frames recur across paths

    depths: list[int] = []
    child: dict[tuple[int | None, int], int] = {}  # a prefix tree: one node per (parent, frame)

    def append(parent: int | None, frame: int) -> int:
        existing = child.get((parent, frame))
        if existing is not None:
            return existing
        nodes.append([parent, frame])
        depths.append(0 if parent is None else depths[parent] + 1)
        child[(parent, frame)] = len(nodes) - 1
        return len(nodes) - 1

    for root in ROOT_PATHS:
        prefix: list[int] = []
        parent = None
        for frame in root:
            parent = append(parent, frame)
            prefix.append(parent)
        paths.append(prefix)

    while len(nodes) < node_count:
        base = paths[rng.randrange(len(paths))]
        depth = min(shape.max_depth, int(rng.triangular(*shape.depth)))
        # Branch low in the tree more often than high: most of a stack is shared prefix.
        share = rng.betavariate(*shape.branch)
        keep = min(len(base), depth - 1, max(1, int(len(base) * share)))
        path = base[:keep]
        parent = path[-1]
        room = node_count - len(nodes)
        new_frames = depth - keep
        if new_frames > room:
            new_frames = room
        for position in range(new_frames):
            is_last = position == new_frames - 1
            if is_last and rng.random() < 0.9:
                frame = rng.choice(pools.allocators)
            else:
                frame = middle[rng.choices(range(len(middle)), cum_weights=middle_weights)[0]]
            parent = append(parent, frame)
            path.append(parent)
        if new_frames > 0:
            paths.append(path)

    leaves = [p[-1] for p in paths if len(p) >= 5]
    # Some inner nodes allocate too (a method that allocates and then calls on).
    inner = [i for i in range(len(nodes)) if i % 7 == 3 and depths[i] >= 4]
    sites = sorted(set(leaves) | set(inner[: len(leaves) // 2]))
    return StackTree(nodes=nodes, sites=sites)
