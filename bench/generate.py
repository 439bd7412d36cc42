"""Generate large, realistic memdash.snapshot v1 documents for the benchmark.

The shape follows what a monitor on a big chat app uploads after a launch: about a million
aggregated allocation rows over ~5,000 categories whose sizes follow a Zipf-like law (a few
`Malloc N Bytes` and Foundation classes hold most of the rows, thousands of app classes a few
each, some `VM: …` regions), a call-stack prefix tree of ~200,000 nodes with depths 5–64 that
share their outer frames (start → main → UIApplicationMain → run loop → …), frames that are
symbolicated strings, symbol+image+address objects, or bare image+address objects, images with
the OS libraries flagged `system`, threads and generation marks. The `events` variant replays to
a similar snapshot: malloc/calloc/realloc/free/vm_allocate/vm_deallocate with addresses that
are really live when freed (plus a few frees of blocks allocated before recording began).

Deterministic: the same sizes and seed give byte-identical files (gzip mtime is 0). Pure Python
(random + orjson), no Django, so it runs before the site exists.

    python bench/generate.py --rows 1000000 --nodes 200000 --categories 5000 -o var/bench/a.json.gz
    python bench/generate.py --shape events --events 1000000 -o var/bench/events.json.gz
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

# memdash's own category names (memdash.core.units is pure: no Django, no settings).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from memdash.core.units import malloc_category  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Sizes


@dataclass(frozen=True)
class Sizes:
    rows: int = 1_000_000
    nodes: int = 200_000
    categories: int = 5_000
    events: int = 1_000_000
    threads: int = 24
    generations: int = 8
    seed: int = 8
    variant: int = 0  # another snapshot of the same app: same stacks and frames, other rows
    bundle_id: str = "com.example.chat"
    build_version: str = "9.0.0"
    build_number: str = "900"
    device_id: str = "BENCH-DEVICE-1"

    @property
    def frames(self) -> int:
        # Real trees reuse a frame at many nodes (the same method called from many places).
        return max(64, self.nodes // 5)


SMALL = Sizes(rows=10_000, nodes=4_000, categories=400, events=10_000)

# ---------------------------------------------------------------------------------------------
# Names

SYSTEM_IMAGES = [
    "libsystem_malloc.dylib",
    "libobjc.A.dylib",
    "libswiftCore.dylib",
    "CoreFoundation",
    "Foundation",
    "UIKitCore",
    "QuartzCore",
    "CoreGraphics",
    "ImageIO",
    "libdispatch.dylib",
    "libsystem_pthread.dylib",
    "dyld",
    "GraphicsServices",
    "CFNetwork",
    "libsqlite3.dylib",
    "JavaScriptCore",
    "WebKit",
    "AVFCore",
    "CoreText",
    "libc++.1.dylib",
    "Security",
    "CoreData",
    "Metal",
    "IOKit",
    "libnetwork.dylib",
    "CoreMedia",
    "VideoToolbox",
    "AudioToolbox",
    "MapKit",
    "Photos",
]
APP_IMAGES = ["Chat", "ChatKit", "ChatUI", "MediaKit", "NetKit", "StorageKit", "WCDB"]

CLASS_PREFIXES = ["WC", "MM", "Chat", "CK", "MK"]
CLASS_WORDS_1 = [
    "Message",
    "Chat",
    "Feed",
    "Profile",
    "Media",
    "Image",
    "Video",
    "Audio",
    "Call",
    "Contact",
    "Sticker",
    "Emoji",
    "Moments",
    "Wallet",
    "Mini",
    "Search",
    "Settings",
    "Network",
    "Cache",
    "Store",
    "Sync",
    "Upload",
    "Download",
    "Render",
    "Layout",
    "Text",
    "Font",
    "Theme",
    "Notification",
    "Push",
    "Login",
    "Account",
    "Session",
    "Timeline",
    "Comment",
    "Like",
    "Share",
    "Map",
    "Location",
    "Camera",
    "Photo",
    "Album",
    "Gallery",
    "Scanner",
    "Payment",
    "Order",
    "Cart",
    "Product",
    "Packet",
    "Group",
    "Member",
    "Badge",
    "Voice",
    "Live",
    "Stream",
    "Player",
    "Editor",
    "Draft",
    "Keyboard",
    "Input",
    "Bubble",
    "Reply",
    "Quote",
    "Forward",
    "Pin",
    "Mute",
    "Archive",
    "Thread",
]
CLASS_WORDS_2 = [
    "View",
    "Controller",
    "Model",
    "Manager",
    "Service",
    "Cell",
    "Layer",
    "Item",
    "Node",
    "Builder",
    "Parser",
    "Decoder",
    "Encoder",
    "Cache",
    "Store",
    "Provider",
    "Adapter",
    "Coordinator",
    "Presenter",
    "Interactor",
    "Router",
    "Operation",
    "Task",
    "Request",
    "Response",
    "Context",
    "Buffer",
    "Record",
    "Entry",
    "Info",
    "Config",
    "Helper",
]
SELECTORS = [
    "init",
    "initWithFrame:",
    "viewDidLoad",
    "layoutSubviews",
    "drawRect:",
    "reloadData",
    "load:",
    "decode:",
    "encode:",
    "setObject:forKey:",
    "objectForKey:",
    "prepareForReuse",
    "configureWithModel:",
    "updateLayout",
    "handleResponse:",
    "startRequest:",
    "didReceiveData:",
    "appendItems:",
    "fetchPage:",
    "scrollViewDidScroll:",
    "tableView:cellForRowAtIndexPath:",
    "collectionView:cellForItemAtIndexPath:",
    "observeValueForKeyPath:",
    "applicationDidBecomeActive:",
    "process:",
    "flush",
    "runBlock:",
    "sendMessage:",
    "resizeImage:toSize:",
]
SYSTEM_CLASSES = [
    "NSMutableDictionary",
    "__NSDictionaryM",
    "__NSArrayM",
    "__NSArrayI",
    "NSMutableArray",
    "__NSCFString",
    "NSConcreteData",
    "NSConcreteMutableData",
    "CFString",
    "CFData",
    "CFDictionary",
    "CFArray",
    "CFNumber",
    "CFURL",
    "NSURL",
    "NSURLRequest",
    "NSURLResponse",
    "NSHTTPURLResponse",
    "NSURLSessionTask",
    "__NSSetM",
    "__NSSetI",
    "NSMutableAttributedString",
    "NSConcreteAttributedString",
    "NSParagraphStyle",
    "NSDate",
    "NSUUID",
    "NSOperation",
    "NSBlockOperation",
    "NSInvocation",
    "NSNotification",
    "NSMapTable",
    "NSHashTable",
    "NSPointerArray",
    "UIView",
    "UILabel",
    "UIImageView",
    "UIImage",
    "UIButton",
    "UITableViewCell",
    "UICollectionViewCell",
    "UITableView",
    "UICollectionView",
    "UIScrollView",
    "UIViewController",
    "UINavigationController",
    "UIGestureRecognizer",
    "UITapGestureRecognizer",
    "UIPanGestureRecognizer",
    "UIColor",
    "UIFont",
    "UITraitCollection",
    "UIWindowScene",
    "UIBezierPath",
    "CALayer",
    "CAShapeLayer",
    "CAGradientLayer",
    "CATextLayer",
    "CABasicAnimation",
    "CAAnimationGroup",
    "CATransaction",
    "CGPath",
    "CGImage",
    "CGColor",
    "CGDataProvider",
    "CTFont",
    "CTLine",
    "CTRun",
    "CTFramesetter",
    "__NSMallocBlock__",
    "__NSStackBlock__",
    "__NSGlobalBlock__",
    "OS_dispatch_queue",
    "OS_dispatch_source",
    "OS_dispatch_group",
    "OS_xpc_dictionary",
    "OS_os_log",
    "NSThread",
    "NSRunLoop",
    "NSTimer",
    "NSLock",
    "NSRecursiveLock",
    "NSCondition",
    "Swift._ContiguousArrayStorage<Swift.String>",
    "Swift._DictionaryStorage<Swift.String,Any>",
    "Swift._SetStorage<Swift.Int>",
    "Swift.__StringStorage",
    "Foundation.__DataStorage",
    "_TtCs12_SwiftObject",
    "WKWebView",
    "WKContentView",
    "JSContext",
    "JSValue",
    "AVPlayer",
    "AVPlayerItem",
    "AVAsset",
    "AVURLAsset",
    "CMSampleBuffer",
    "CVPixelBuffer",
    "MTLBuffer",
    "MTLTexture",
    "NSManagedObject",
    "NSManagedObjectContext",
    "NSFetchRequest",
    "NSPredicate",
    "NSSortDescriptor",
    "NSRegularExpression",
]
VM_TAGS = {
    # Mach VM tags, as in mach/vm_statistics.h: (tag, the name Instruments shows).
    1: "MALLOC",
    2: "MALLOC_SMALL",
    3: "MALLOC_LARGE",
    7: "MALLOC_TINY",
    11: "MALLOC_NANO",
    21: "IOKit",
    30: "Stack",
    33: "dylib",
    41: "Foundation",
    42: "CoreGraphics",
    51: "CoreAnimation",
    52: "CG image",
    62: "SQLite",
    63: "JavaScriptCore",
    70: "ImageIO",
    74: "Dispatch continuations",
}
VM_CATEGORY_NAMES = [f"VM: {name}" for name in VM_TAGS.values()] + [
    "VM: Anonymous VM",
    "VM: CG raster data",
    "VM: IOSurface",
    "VM: IOAccelerator",
    "VM: CoreUI image data",
    "VM: JS JIT generated code",
    "VM: WebKit Malloc",
    "VM: libnetwork",
    "VM: Performance tool data",
    "VM: Image IO",
    "VM: Activity Tracing",
    "VM: Kernel Alloc Once",
    "VM: Accelerate framework",
    "VM: CoreData",
]
THREAD_NAMES = [
    "main",
    "com.apple.uikit.eventfetch-thread",
    "com.apple.NSURLConnectionLoader",
    "com.apple.CFNetwork.CustomProtocols",
    "JavaScriptCore bmalloc scavenger",
    "com.apple.coreanimation.render-server",
    "com.example.chat.db",
    "com.example.chat.network",
    "com.example.chat.image-decode",
    "com.example.chat.sync",
    "AVAudioSession Notify Thread",
    "WebThread",
]
GENERATION_NAMES = [
    "Launch",
    "First frame",
    "Login",
    "Open chat list",
    "Open chat",
    "Scroll history",
    "Send photo",
    "Background",
]


# ---------------------------------------------------------------------------------------------
# Categories


@dataclass(frozen=True)
class CategorySpec:
    name: str
    unit_size: int  # bytes of one allocation of this category
    is_vm: bool


def malloc_sizes() -> list[int]:
    small = list(range(16, 1025, 16))  # tiny/nano quanta
    kib = [1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152, 65536, 131072]
    mib = [1 << 20, 2 << 20, 4 << 20]
    return small + kib + mib


def make_categories(rng: random.Random, count: int) -> list[CategorySpec]:
    """Categories in Zipf rank order: rank 0 is the most frequent."""
    mallocs = [CategorySpec(malloc_category(s), s, False) for s in malloc_sizes()]
    systems = [CategorySpec(n, 16 * rng.randint(1, 16), False) for n in SYSTEM_CLASSES]
    vms = [
        CategorySpec(n, 16384 * rng.choice([1, 1, 2, 4, 8, 16]), True) for n in VM_CATEGORY_NAMES
    ]
    app_names = (
        f"{prefix}{w1}{w2}"
        for prefix, w1, w2 in itertools.product(CLASS_PREFIXES, CLASS_WORDS_1, CLASS_WORDS_2)
    )
    fixed = len(mallocs) + len(systems) + len(vms)
    app_count = max(0, count - fixed)
    pool = list(itertools.islice(app_names, 0, None))
    rng.shuffle(pool)
    if app_count > len(pool):  # more than the word product: number the rest, still unique
        pool += [f"ChatGen{i}Model" for i in range(app_count - len(pool))]
    apps = [CategorySpec(name, 16 * rng.randint(2, 32), False) for name in pool[:app_count]]
    # The head of the distribution is what it is on a real device: small mallocs and the
    # Foundation containers; the long tail mixes everything else.
    head = mallocs[:12] + systems[:12]
    rng.shuffle(head)
    tail = mallocs[12:] + systems[12:] + vms + apps
    rng.shuffle(tail)
    return (head + tail)[:count]


def zipf_cum_weights(count: int, exponent: float = 1.1) -> list[float]:
    return list(itertools.accumulate(1.0 / (rank**exponent) for rank in range(1, count + 1)))


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


def make_stack_tree(rng: random.Random, node_count: int, pools: FramePools) -> StackTree:
    """Grow a prefix tree: each new path branches off an existing path at some depth and runs
    down to a leaf depth between 5 and 64, ending in an allocator frame. Parents always come
    before their children, as the format requires."""
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
        depth = min(64, int(rng.triangular(5, 65, 18)))
        # Branch low in the tree more often than high: most of a stack is shared prefix.
        keep = min(len(base), depth - 1, max(1, int(len(base) * rng.betavariate(2.5, 1.5))))
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


# ---------------------------------------------------------------------------------------------
# Aggregated rows


def thread_names(count: int) -> list[str]:
    names = list(THREAD_NAMES[:count])
    names += [f"Thread {i}" for i in range(len(names), count)]
    return names


def generation_marks(count: int) -> list[dict[str, Any]]:
    marks = []
    at = 1200  # the first mark comes after launch began: rows before it have generation null
    for i in range(count):
        name = GENERATION_NAMES[i] if i < len(GENERATION_NAMES) else f"Mark {i}"
        marks.append({"name": name, "at_ms": at})
        at += 2500 + 1500 * i
    return marks


def heavy_tail_count(rng: random.Random, alpha: float, cap: int) -> int:
    return min(cap, int(rng.paretovariate(alpha)))


def make_rows(
    rng: random.Random,
    sizes: Sizes,
    categories: list[CategorySpec],
    sites: list[int],
) -> list[dict[str, Any]]:
    """`sizes.rows` rows, each unique by (category, stack, thread, generation)."""
    n = sizes.rows
    cat_weights = zipf_cum_weights(len(categories))
    site_weights = zipf_cum_weights(len(sites), 0.4)
    thread_weights = zipf_cum_weights(sizes.threads, 1.3)
    gen_values: list[int | None] = [None, *range(sizes.generations)]
    gen_weights = list(itertools.accumulate([3.0] + [1.0] * sizes.generations))
    # An allocation site mostly allocates one type; mallocs of several sizes happen too.
    primary = rng.choices(range(len(categories)), cum_weights=cat_weights, k=len(sites))
    site_primary = dict(zip(sites, primary, strict=True))

    rows: list[dict[str, Any]] = []
    seen: set[int] = set()
    n_cat, n_thread, n_gen = len(categories), sizes.threads, len(gen_values)
    while len(rows) < n:
        batch = n - len(rows) + 16
        site_draw = rng.choices(sites, cum_weights=site_weights, k=batch)
        cat_draw = rng.choices(range(n_cat), cum_weights=cat_weights, k=batch)
        thread_draw = rng.choices(range(n_thread), cum_weights=thread_weights, k=batch)
        gen_draw = rng.choices(range(n_gen), cum_weights=gen_weights, k=batch)
        for site, cat, thread, gen in zip(site_draw, cat_draw, thread_draw, gen_draw, strict=True):
            if rng.random() < 0.6:
                cat = site_primary[site]
            key = ((site * n_thread + thread) * n_gen + gen) * n_cat + cat
            if key in seen:
                continue
            seen.add(key)
            rows.append(allocation_row(rng, categories[cat], site, thread, gen_values[gen]))
            if len(rows) == n:
                break
    return rows


def allocation_row(
    rng: random.Random, cat: CategorySpec, site: int, thread: int, generation: int | None
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "category": cat.name,
        "stack": site,
        "thread": thread,
        "generation": generation,
    }
    unit = cat.unit_size
    if cat.is_vm:
        persistent = heavy_tail_count(rng, 2.5, 64)
        transient = heavy_tail_count(rng, 2.0, 64) - 1
    else:
        persistent = heavy_tail_count(rng, 1.6, 5_000) - (1 if rng.random() < 0.3 else 0)
        transient = heavy_tail_count(rng, 1.3, 100_000) - 1
    if persistent == 0 and transient <= 0:
        persistent = 1
    # Devices leave out zero counters (they default to 0 in the format).
    if persistent:
        row["persistent"] = persistent
        row["persistent_bytes"] = persistent * unit
    if transient > 0:
        row["transient"] = transient
        row["transient_bytes"] = transient * unit
    return row


# ---------------------------------------------------------------------------------------------
# Events


@dataclass
class LiveSet:
    """Live blocks with O(1) random pick and removal."""

    addresses: list[int]
    position: dict[int, int]

    @classmethod
    def empty(cls) -> LiveSet:
        return cls([], {})

    def add(self, address: int) -> None:
        self.position[address] = len(self.addresses)
        self.addresses.append(address)

    def pop_random(self, rng: random.Random) -> int:
        i = rng.randrange(len(self.addresses))
        address = self.addresses[i]
        last = self.addresses.pop()
        if last != address:
            self.addresses[i] = last
            self.position[last] = i
        del self.position[address]
        return address

    def __len__(self) -> int:
        return len(self.addresses)


EVENT_MIX = [  # (fn, weight): frees trail allocations so the heap grows during the run
    ("malloc", 44),
    ("calloc", 6),
    ("realloc", 6),
    ("free", 38),
    ("vm_allocate", 3),
    ("vm_deallocate", 2),
    ("free_unmatched", 1),
]


def make_events(
    rng: random.Random,
    sizes: Sizes,
    categories: list[CategorySpec],
    sites: list[int],
) -> list[dict[str, Any]]:
    heap_cats = [c for c in categories if not c.is_vm]
    class_cats = [c for c in heap_cats if not c.name.startswith("Malloc ")]
    small_sizes = malloc_sizes()[:64] + [1536, 2048, 4096, 8192, 16384]
    size_weights = zipf_cum_weights(len(small_sizes), 0.9)
    class_weights = zipf_cum_weights(len(class_cats))
    site_weights = zipf_cum_weights(len(sites), 0.6)
    thread_weights = zipf_cum_weights(sizes.threads, 1.3)
    fns = [fn for fn, _ in EVENT_MIX]
    fn_weights = list(itertools.accumulate(w for _, w in EVENT_MIX))
    vm_tags = [*VM_TAGS, None, None]

    n = sizes.events
    fn_draw = rng.choices(fns, cum_weights=fn_weights, k=n)
    site_draw = rng.choices(sites, cum_weights=site_weights, k=n)
    thread_draw = rng.choices(range(sizes.threads), cum_weights=thread_weights, k=n)

    heap, vm = LiveSet.empty(), LiveSet.empty()
    reusable: list[int] = []  # freed heap addresses, reused LIFO like a real allocator
    next_heap, next_vm = 0x280000000, 0x300000000
    t_ms = 0.0
    duration_ms = generation_marks(sizes.generations)[-1]["at_ms"] + 4000
    step = duration_ms / max(1, n)
    events: list[dict[str, Any]] = []

    def new_heap_address() -> int:
        nonlocal next_heap
        while reusable and rng.random() < 0.5:
            address = reusable.pop()
            if address not in heap.position:
                return address
        next_heap += 16 * rng.randint(1, 64)
        return next_heap

    for fn, site, thread in zip(fn_draw, site_draw, thread_draw, strict=True):
        t_ms += rng.expovariate(1.0 / step)
        event: dict[str, Any] = {"t_ms": round(t_ms, 3), "fn": fn}
        if fn in ("free", "vm_deallocate", "realloc") and not (
            heap if fn != "vm_deallocate" else vm
        ):
            fn = event["fn"] = "malloc"  # nothing live yet to free
        if fn in ("malloc", "calloc"):
            address = new_heap_address()
            heap.add(address)
            event["address"] = address
            if rng.random() < 0.5:  # an object allocation: the monitor names its class
                cat = class_cats[rng.choices(range(len(class_cats)), cum_weights=class_weights)[0]]
                event["size"] = cat.unit_size
                event["category"] = cat.name
            else:  # a raw malloc: memdash names it `Malloc <size>`
                event["size"] = small_sizes[
                    rng.choices(range(len(small_sizes)), cum_weights=size_weights)[0]
                ]
        elif fn == "realloc":
            old = heap.pop_random(rng)
            reusable.append(old)
            address = new_heap_address()
            heap.add(address)
            event["old_address"] = old
            event["address"] = address
            event["size"] = small_sizes[rng.randrange(len(small_sizes))]
        elif fn == "free":
            address = heap.pop_random(rng)
            reusable.append(address)
            event["address"] = address
        elif fn == "free_unmatched":  # a block allocated before recording began
            event["fn"] = "free"
            event["address"] = 0x200000000 + 16 * rng.randrange(1 << 20)
            events.append(event)
            continue
        elif fn == "vm_allocate":
            next_vm += 16384 * rng.randint(1, 256)
            vm.add(next_vm)
            event["address"] = next_vm
            event["size"] = 16384 * rng.choice([1, 1, 2, 4, 8, 16, 64])
            tag = rng.choice(vm_tags)
            if tag is not None:
                event["vm_tag"] = tag
        elif fn == "vm_deallocate":
            event["address"] = vm.pop_random(rng)
        if fn in ("malloc", "calloc", "realloc", "vm_allocate"):
            event["stack"] = site
            event["thread"] = thread
        events.append(event)
    return events


# ---------------------------------------------------------------------------------------------
# The document


def snapshot_document(sizes: Sizes = Sizes(), shape: str = "allocations") -> dict[str, Any]:
    """A memdash.snapshot v1 document of the given sizes; `shape` is "allocations" or "events"."""
    if shape not in ("allocations", "events"):
        raise ValueError(f"unknown shape {shape!r}")
    rng = random.Random(sizes.seed)
    categories = make_categories(rng, sizes.categories)
    images = make_images(rng)
    frames, pools = make_frames(rng, images, sizes.frames)
    tree = make_stack_tree(rng, sizes.nodes, pools)
    commit = f"{rng.getrandbits(28):07x}"
    session = uuid_like(rng).lower()
    if sizes.variant:
        # Same app, build and code (frames, stacks): another device's run.
        rng = random.Random(f"{sizes.seed}/{sizes.variant}")
        session = uuid_like(rng).lower()
    minute = sizes.variant % 60
    hour = 10 + (sizes.variant // 60) % 12
    doc: dict[str, Any] = {
        "format": "memdash.snapshot",
        "version": 1,
        "app": {"id": sizes.bundle_id, "platform": "ios", "name": "Chat"},
        "build": {
            "version": sizes.build_version,
            "number": sizes.build_number,
            "commit": commit,
        },
        "device": {"id": sizes.device_id, "model": "iPhone14,5", "os": "iOS 17.4.1"},
        "session": session,
        "captured_at": f"2026-11-20T{hour:02d}:{minute:02d}:03+00:00",
        "trigger": "test",
        "images": images,
        "frames": frames,
        "stacks": tree.nodes,
        "threads": thread_names(sizes.threads),
        "generations": generation_marks(sizes.generations),
    }
    if shape == "allocations":
        doc["allocations"] = make_rows(rng, sizes, categories, tree.sites)
    else:
        doc["events"] = make_events(rng, sizes, categories, tree.sites)
    return doc


def encode_gzip(doc: dict[str, Any], level: int = 6) -> bytes:
    return gzip.compress(orjson.dumps(doc), compresslevel=level, mtime=0)


def write_document(doc: dict[str, Any], path: Path, level: int = 6) -> int:
    """Write the document as .json.gz (or plain .json) and return the file's size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = encode_gzip(doc, level) if path.name.endswith(".gz") else orjson.dumps(doc)
    path.write_bytes(data)
    return len(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=["allocations", "events"], default="allocations")
    parser.add_argument("--rows", type=int, default=Sizes.rows)
    parser.add_argument("--nodes", type=int, default=Sizes.nodes)
    parser.add_argument("--categories", type=int, default=Sizes.categories)
    parser.add_argument("--events", type=int, default=Sizes.events)
    parser.add_argument("--seed", type=int, default=Sizes.seed)
    parser.add_argument(
        "--variant",
        type=int,
        default=0,
        help="another run of the same app: other rows, same stacks",
    )
    parser.add_argument("--device", default=Sizes.device_id, help="device id in the document")
    parser.add_argument("--build", default=Sizes.build_version, help="build version")
    parser.add_argument("--level", type=int, default=6, help="gzip level")
    parser.add_argument("-o", "--output", type=Path, required=True, help="file.json.gz")
    args = parser.parse_args(argv)
    sizes = Sizes(
        rows=args.rows,
        nodes=args.nodes,
        categories=args.categories,
        events=args.events,
        seed=args.seed,
        variant=args.variant,
        device_id=args.device,
        build_version=args.build,
    )
    started = time.perf_counter()
    doc = snapshot_document(sizes, args.shape)
    built = time.perf_counter()
    size = write_document(doc, args.output, args.level)
    done = time.perf_counter()
    count = len(doc.get("allocations") or doc.get("events") or [])
    print(
        f"{args.output}: {args.shape} {count:,} items, {len(doc['stacks']):,} stack nodes, "
        f"{len(doc['frames']):,} frames, {size / 1e6:.1f} MB "
        f"(built {built - started:.1f} s, written {done - built:.1f} s)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
