"""The same allocations as a pprof heap profile, for a comparison with `go tool pprof -top`.

`profile_bytes(doc)` writes a memdash.snapshot document's allocation rows as a gzip-compressed
profile.proto (sample types alloc_objects/alloc_space/inuse_objects/inuse_space; one function
and one location per frame; a sample per row with its stack leaf first and a `bytes` label).
Then, on a machine with Go, `go tool pprof -top -sample_index=inuse_space` reads it and its
time and total are set beside memdash's own import of the same file (through the upload
service, as any pprof upload) and memdash's statistics. Without Go only memdash's side runs.

    python bench/pprof_compare.py worker --profile F.pb.gz       # child: memdash's import
"""

from __future__ import annotations

import argparse
import gzip
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH, PYTHON, emit, memdash_env, run_json  # noqa: E402

# --- A minimal protobuf writer (varints and length-delimited fields are all pprof needs) ----


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 as two's complement, as protobuf does
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_varint(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def field_bytes(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def packed(number: int, values: list[int]) -> bytes:
    return field_bytes(number, b"".join(varint(v) for v in values))


class Strings:
    def __init__(self) -> None:
        self.index: dict[str, int] = {"": 0}
        self.table: list[str] = [""]

    def __call__(self, text: str) -> int:
        found = self.index.get(text)
        if found is None:
            found = self.index[text] = len(self.table)
            self.table.append(text)
        return found


def frame_name(frame: Any, images: list[dict]) -> str:
    if isinstance(frame, str):
        return frame
    if frame.get("symbol"):
        return frame["symbol"]
    image = images[frame["image"]]["name"] if frame.get("image") is not None else "?"
    return f"{image} + {frame.get('address')}"


def profile_bytes(doc: dict[str, Any]) -> bytes:
    """The document's allocation rows as a gzip-compressed pprof profile."""
    s = Strings()
    images = doc.get("images") or []
    parts: list[bytes] = []
    for kind, unit in (
        ("alloc_objects", "count"),
        ("alloc_space", "bytes"),
        ("inuse_objects", "count"),
        ("inuse_space", "bytes"),
    ):
        parts.append(field_bytes(1, field_varint(1, s(kind)) + field_varint(2, s(unit))))
    parents = [parent for parent, _ in doc["stacks"]]
    frames_of = [frame for _, frame in doc["stacks"]]
    for row in doc["allocations"]:
        p, pb = row.get("persistent", 0), row.get("persistent_bytes", 0)
        t, tb = row.get("transient", 0), row.get("transient_bytes", 0)
        locations = []
        node = row.get("stack")
        while node is not None:
            locations.append(frames_of[node] + 1)
            node = parents[node]
        size = pb // p if p else (tb // t if t else 0)
        label = field_varint(1, s("bytes")) + field_varint(3, size)
        sample = packed(1, locations) + packed(2, [p + t, pb + tb, p, pb]) + field_bytes(3, label)
        parts.append(field_bytes(2, sample))
    for i, frame in enumerate(doc["frames"]):
        line = field_varint(1, i + 1)
        parts.append(field_bytes(4, field_varint(1, i + 1) + field_bytes(4, line)))
        name = s(frame_name(frame, images))
        parts.append(field_bytes(5, field_varint(1, i + 1) + field_varint(2, name)))
    # Fields in number order, as Go writes them: the string table after the functions.
    period_type = field_bytes(11, field_varint(1, s("space")) + field_varint(2, s("bytes")))
    parts += [field_bytes(6, text.encode()) for text in s.table]
    parts += [field_varint(9, 1_763_633_523 * 10**9), period_type, field_varint(12, 1)]
    return gzip.compress(b"".join(parts), 6, mtime=0)


# --- memdash's side ----------------------------------------------------------------------------


def worker(profile: Path, build: str) -> dict[str, Any]:
    from common import setup_django

    setup_django()
    from memdash.allocations.models import Snapshot
    from memdash.core import services as core_services
    from memdash.ingest.services import receive_upload
    from memdash.ingest.tasks import process_upload

    app = core_services.get_or_create_app("com.example.pprof", "linux")
    with open(profile, "rb") as stream:
        upload, _ = receive_upload(
            app, iter([stream.read()]), fields={"build_version": build}, run=False
        )
    started = time.perf_counter()
    upload = process_upload(upload)
    elapsed = time.perf_counter() - started
    if upload.status != "done":
        return {"error": f"{upload.status}: {upload.error_path}: {upload.error}"}
    snapshot = Snapshot.objects.get(pk=upload.result_id)
    return {
        "import_seconds": elapsed,
        "persistent_bytes": snapshot.persistent_bytes,
        "persistent": snapshot.persistent,
        "rows": snapshot.row_count,
    }


TOTAL = re.compile(r"of ([\d.]+)([kMGT]?B) total")
UNITS = {"B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}


def go_pprof_top(profile: Path) -> dict[str, Any]:
    go = shutil.which("go")
    if not go:
        return {"skipped": "Go is not installed (`which go` finds nothing)"}
    started = time.perf_counter()
    proc = subprocess.run(
        [go, "tool", "pprof", "-top", "-sample_index=inuse_space", str(profile)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    elapsed = time.perf_counter() - started
    match = TOTAL.search(proc.stdout + proc.stderr)
    total = float(match.group(1)) * UNITS[match.group(2)] if match else None
    return {"seconds": elapsed, "inuse_space_total": total, "returncode": proc.returncode}


def compare(doc: dict[str, Any], url: str, var_dir: Path) -> dict[str, Any]:
    path = var_dir / "data" / f"pprof-{len(doc['allocations'])}.pb.gz"
    started = time.perf_counter()
    path.write_bytes(profile_bytes(doc))
    written = time.perf_counter() - started
    expected = sum(r.get("persistent_bytes", 0) for r in doc["allocations"])
    memdash = run_json(
        [PYTHON, str(BENCH / "pprof_compare.py"), "worker", "--profile", str(path)],
        memdash_env(url, var_dir),
    )
    return {
        "profile_bytes": path.stat().st_size,
        "write_seconds": written,
        "document_inuse_space": expected,
        "memdash": memdash,
        "go_pprof": go_pprof_top(path),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker")
    w.add_argument("--profile", type=Path, required=True)
    w.add_argument("--build", default="pprof-bench")
    args = parser.parse_args(argv)
    emit(worker(args.profile, args.build))
    return 0


if __name__ == "__main__":
    sys.exit(main())
