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

The generator is split by floor (each imports only the ones above it in this list):
generate_names (the name pools), generate_sizes (Sizes, Zipf weights, categories, the
timeline), generate_stacks (images, frames, the stack tree), generate_rows and generate_events
(the two shapes); this module assembles the document and keeps the public names other files
import from `generate`.

Deterministic: the same sizes and seed give byte-identical files (gzip mtime is 0). Pure Python
(random + orjson), no Django, so it runs before the site exists.

    python bench/generate.py --rows 1000000 --nodes 200000 --categories 5000 -o var/bench/a.json.gz
    python bench/generate.py --shape events --events 1000000 -o var/bench/events.json.gz
"""

from __future__ import annotations

import argparse
import gzip
import random
import sys
import time
from pathlib import Path
from typing import Any

import orjson
from generate_events import EVENT_MIX, LiveSet, make_events
from generate_rows import allocation_row, heavy_tail_count, make_rows
from generate_sizes import (
    SMALL,
    CategorySpec,
    Sizes,
    generation_marks,
    make_categories,
    malloc_sizes,
    thread_names,
    zipf_cum_weights,
)
from generate_stacks import (
    NODE_HEAVY,
    ROOT_PATHS,
    SHARED,
    FramePools,
    StackTree,
    TreeShape,
    image_index,
    make_frames,
    make_images,
    make_stack_tree,
    uuid_like,
)

# Everything `generate` exported before the split, so `from generate import …` keeps working
# (the name pools themselves are in generate_names).
__all__ = [
    "EVENT_MIX",
    "NODE_HEAVY",
    "ROOT_PATHS",
    "SMALL",
    "CategorySpec",
    "FramePools",
    "LiveSet",
    "Sizes",
    "StackTree",
    "allocation_row",
    "encode_gzip",
    "generation_marks",
    "heavy_tail_count",
    "image_index",
    "main",
    "make_categories",
    "make_events",
    "make_frames",
    "make_images",
    "make_rows",
    "make_stack_tree",
    "malloc_sizes",
    "snapshot_document",
    "thread_names",
    "uuid_like",
    "write_document",
    "zipf_cum_weights",
]

# ---------------------------------------------------------------------------------------------
# The document


# Sizes is a frozen dataclass, so sharing one default instance is safe (and is what a call in
# the signature did); ruff can't see that across modules.
DEFAULT_SIZES = Sizes()


def snapshot_document(
    sizes: Sizes = DEFAULT_SIZES, shape: str = "allocations", tree_shape: TreeShape = SHARED
) -> dict[str, Any]:
    """A memdash.snapshot v1 document of the given sizes; `shape` is "allocations" or "events",
    `tree_shape` how its stacks grow (NODE_HEAVY: deep chains that part early)."""
    if shape not in ("allocations", "events"):
        raise ValueError(f"unknown shape {shape!r}")
    rng = random.Random(sizes.seed)
    categories = make_categories(rng, sizes.categories)
    images = make_images(rng)
    frames, pools = make_frames(rng, images, sizes.frames)
    tree = make_stack_tree(rng, sizes.nodes, pools, tree_shape)
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
