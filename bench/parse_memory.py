"""Peak memory of a worker per decompressed byte, for each family of upload formats.

Each measurement is one child process on a fresh (copied) SQLite database: it receives the
upload (streamed to storage, as the web door does), notes its RSS, runs the task
(`memdash.ingest.tasks.process_upload`: read and gunzip, parse, convert, validate, store), and
reads its peak RSS (VmHWM). The factor is (peak - RSS before the task) / decompressed size; two
sizes per format also give the marginal factor (the slope: what one more byte of content costs,
without the fixed costs of a task), which is what
`memdash.ingest.writes.parse_memory.FACTORS` is set from (rounded up).

    python bench/parse_memory.py                       # every family, 8 and 32 MB of content
    python bench/parse_memory.py --only massif --sizes 4,16
    python bench/parse_memory.py worker --file F --format massif   # child: JSON out

The inputs are generated (the benchmark's snapshot generator and its shapes for the others),
except heaptrack's: the largest real data file in tests/data (its size is fixed).
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    BENCH,
    PYTHON,
    ROOT,
    clone_database,
    current_rss_bytes,
    emit,
    fresh_memdash_database,
    log,
    memdash_env,
    proc_status,
    run_json,
)
from generate import Sizes, snapshot_document  # noqa: E402
from others import cycle_docs, session_docs  # noqa: E402
from pprof_compare import profile_bytes  # noqa: E402

MB = 1024 * 1024
HEAPTRACK_SAMPLE = ROOT / "tests/data/heaptrack/heaptrack.heaptrack_gui.99529.zst"


# ---------------------------------------------------------------------------------------------
# Inputs: (content, body) of about `n` units; the body is what is uploaded (gzip or as is)


def snapshot(n: int) -> bytes:
    return orjson.dumps(snapshot_document(Sizes(rows=n, nodes=max(100, n // 5), categories=2000)))


def snapshot_repeated(n: int) -> bytes:
    """The same 100 rows over and over (they add up): the most objects per byte of JSON, and a
    gzip of a few hundred to one, as the upload of issue 21 was (1.4 MB for 600 MB)."""
    doc = snapshot_document(Sizes(rows=100, nodes=50, categories=10))
    doc["allocations"] = doc["allocations"] * max(1, n // 100)
    return orjson.dumps(doc)


def sessions(n: int) -> bytes:
    return orjson.dumps(next(session_docs(builds=1, devices=n, days=1)))


def cycles(n: int) -> bytes:
    return orjson.dumps(next(cycle_docs(clusters=n, per_doc=n)))


def fbat(n: int) -> bytes:
    rng = random.Random(3)
    return orjson.dumps(
        [
            {"className": f"BenchClass{i}", "allocations": (a := rng.randint(1, 10_000)),
             "deallocations": (d := rng.randint(0, a)), "aliveObjects": a - d,
             "instanceSize": rng.choice((16, 32, 48, 96, 256))}
            for i in range(n)
        ]
    )  # fmt: skip


def matrix(n: int) -> bytes:
    """A Matrix FOOM report: n stacks of 12 frames over 200 categories."""
    rng = random.Random(4)
    uuids = [f"{i:08X}-0000-4000-8000-{i:012X}" for i in range(20)]
    items: list[dict[str, Any]] = []
    for c in range(200):
        stacks = [
            {"caller": f"{uuids[0]}@{rng.randint(0, 1 << 20)}", "size": 64 * (s + 1),
             "count": s + 1,
             "frames": [{"uuid": rng.choice(uuids), "offset": rng.randint(0, 1 << 24)}
                        for _ in range(12)]}
            for s in range(n // 200)
        ]  # fmt: skip
        size = sum(s["size"] for s in stacks)
        count = sum(s["count"] for s in stacks)
        item = {"tag": "iOS_MemStat", "info": "", "scene": "ChatViewController"}
        items.append(
            {**item, "name": f"Category{c}", "size": size, "count": count, "stacks": stacks}
        )
    head = {"protocol_ver": 1, "phone": "iPhone12,1", "os_ver": "15.4.1",
            "launch_time": 1_700_000_000_000, "report_time": 1_700_000_600_000,
            "app_uuid": uuids[0]}  # fmt: skip
    return orjson.dumps({"head": head, "items": items})


def pprof(n: int) -> bytes:
    doc = snapshot_document(Sizes(rows=n, nodes=max(100, n // 5), categories=2000))
    return gzip.decompress(profile_bytes(doc))


def massif(n: int) -> bytes:
    """n detailed snapshots whose trees have 40 × 8 nodes below the root."""
    lines = ["desc: --detailed-freq=1", "cmd: ./bench", "time_unit: ms"]
    for s in range(n):
        callers = [(f"0x{0x400000 + c:X}: caller_{c} (app.c:{c + 1})", 8) for c in range(40)]
        lines += ["#-----------", f"snapshot={s}", "#-----------", f"time={s * 10}",
                  f"mem_heap_B={40 * 8 * 64 * (s + 1)}", "mem_heap_extra_B=8", "mem_stacks_B=0",
                  "heap_tree=detailed",
                  f"n40: {40 * 8 * 64 * (s + 1)} (heap allocation functions) malloc/new/new[], "
                  "--alloc-fns, etc."]  # fmt: skip
        for c, (frame, children) in enumerate(callers):
            lines.append(f" n{children}: {children * 64 * (s + 1)} {frame}")
            lines += [
                f"  n0: {64 * (s + 1)} 0x{0x500000 + c * 8 + k:X}: site_{c}_{k} (lib.c:{k + 1})"
                for k in range(children)
            ]
    return ("\n".join(lines) + "\n").encode()


def sanitizer(n: int) -> bytes:
    lines = ["=" * 65, "==4242==ERROR: LeakSanitizer: detected memory leaks", ""]
    for i in range(n):
        lines.append(f"Direct leak of {16 * (i % 50 + 1)} byte(s) in 1 object(s) allocated from:")
        lines.append("    #0 0x7f6a9da13545 in __interceptor_malloc lsan_interceptors.cpp:75")
        lines += [
            f"    #{k + 1} 0x{0x5600000 + i * 16 + k:x} in fn_{i % 997}_{k} /src/f{k}.c:{i % 300}"
            for k in range(10)
        ]
        lines.append("")
    total = sum(16 * (i % 50 + 1) for i in range(n))
    lines.append(f"SUMMARY: LeakSanitizer: {total} byte(s) leaked in {n} allocation(s).")
    return ("\n".join(lines) + "\n").encode()


def valgrind(n: int) -> bytes:
    p = "==4242=="
    lines = [f"{p} Memcheck, a memory error detector", f"{p} Command: ./bench", f"{p} ",
             f"{p} HEAP SUMMARY:", f"{p}     in use at exit: {100 * n} bytes in {n} blocks",
             f"{p}   total heap usage: {n} allocs, 0 frees, {100 * n} bytes allocated",
             f"{p} "]  # fmt: skip
    for i in range(n):
        lines.append(f"{p} 100 bytes in 1 blocks are definitely lost in loss record {i + 1} of {n}")
        lines.append(f"{p}    at 0x48417B4: malloc (in /usr/libexec/valgrind/vgpreload.so)")
        lines += [
            f"{p}    by 0x{0x109000 + i * 16 + k:X}: fn_{i % 997}_{k} (f{k}.c:{i % 300})"
            for k in range(10)
        ]
        lines.append(f"{p} ")
    lines += [f"{p} LEAK SUMMARY:", f"{p}    definitely lost: {100 * n} bytes in {n} blocks"]
    for kind in ("indirectly lost", "  possibly lost", "still reachable", "     suppressed"):
        lines.append(f"{p}    {kind}: 0 bytes in 0 blocks")
    lines += [f"{p} ", f"{p} ERROR SUMMARY: {n} errors from {n} contexts (suppressed: 0 from 0)"]
    return ("\n".join(lines) + "\n").encode()


def xcode_leaks(n: int) -> bytes:
    """Xcode's leaks with MallocStackLogging: a stack of 10 frames and a tree of 3 blocks per
    root, every tenth a ROOT CYCLE of two classes."""
    body, blocks, leaked = [], 0, 0
    for i in range(n):
        cycle = i % 10 == 0
        root = "ROOT CYCLE" if cycle else "ROOT LEAK"
        body.append(f"STACK OF 1 INSTANCE OF '{root}: <Cls{i % 50}>':")
        body += [
            f"{k:<4}App                                   0x{0x100000000 + i * 64 + k:x} "
            f"fn_{i % 997}_{k}() + {k * 4}  File{k}.swift:{i % 300}"
            for k in range(9, -1, -1)
        ]
        body.append("====")
        base = 0x600000000000 + i * 0x1000
        body.append(f"    3 (112 bytes) {root}: <Cls{i % 50} {base:#x}> [64]")
        if cycle:
            peer, owner, name = f"Peer{i % 7} {base + 64:#x}", f"Cls{i % 50} {base:#x}", base + 96
            body.append(f"       2 (48 bytes) __strong _peer --> ROOT CYCLE: <{peer}> [32]")
            body.append(f"          __weak _owner --> CYCLE BACK TO <{owner}> [64]")
            body.append(f"          1 (16 bytes) __strong _name --> <NSString {name:#x}> [16]")
        else:
            body.append(f"       2 (48 bytes) __strong _items --> <NSArray {base + 64:#x}> [32]")
            body.append(f"          1 (16 bytes) <NSString {base + 96:#x}> [16]")
        body.append("")
        blocks, leaked = blocks + 3, leaked + 112
    head = ["leaks Report Version: 4.0, multi-line stacks",
            "Process 42: 90000 nodes malloced for 9000 KB",
            f"Process 42: {blocks} leaks for {leaked} total leaked bytes.", ""]  # fmt: skip
    return ("\n".join(head + body) + "\n").encode()


def leakcanary(n: int) -> bytes:
    """One LeakCanary analysis of `n` application leaks, a trace of 4 objects each."""
    rule = "=" * 36
    lines = [rule, "HEAP ANALYSIS RESULT", rule, f"{n} APPLICATION LEAKS", ""]
    for i in range(n):
        lines += [
            f"{1000 + i} bytes retained by leaking objects", f"Signature: {i:040x}", "┬───",
            "│ GC Root: System class", "│", f"├─ com.example.Holder{i % 97} class",
            "│    Leaking: NO (a class is never leaking)", f"│    ↓ static Holder{i % 97}.items",
            "│                      ~~~~~", "├─ java.util.ArrayList instance",
            "│    Leaking: UNKNOWN", "│    Retaining 1.0 kB in 12 objects", "│    ↓ ArrayList[0]",
            "├─ java.lang.Object[] array", "│    Leaking: UNKNOWN", "│    ↓ Object[0]",
            f"╰→ com.example.Screen{i % 31} instance",
            "     Leaking: YES (ObjectWatcher was watching this because it was destroyed)",
            "     Retaining 1.0 kB in 11 objects",
            f"     key = {i:08x}-0000-0000-0000-000000000000", "",
        ]  # fmt: skip
    lines += [rule, "0 LIBRARY LEAKS", "", rule, "METADATA", "", "LeakCanary version: 2.14", rule]
    return ("\n".join(lines) + "\n").encode()


def exitinfo_text(n: int) -> bytes:
    """`dumpsys activity exit-info` with `n` records, newest first, a minute apart."""
    from datetime import datetime, timedelta

    newest = datetime(2026, 10, 30, 18, 0, 0)
    lines = [
        "ACTIVITY MANAGER PROCESS EXIT INFO (dumpsys activity exit-info)",
        "  package: com.example.chat",
        "    Historical Process Exit for uid=10245",
    ]
    for i in range(n):
        at = newest - timedelta(seconds=61 * i)
        lines += [
            f"        ApplicationExitInfo #{i}:",
            f"          timestamp={at:%Y-%m-%d %H:%M:%S}.{i % 1000:03d} pid={1000 + i} "
            "realUid=10245 packageUid=10245 definingUid=10245 user=0",
            f"          process=com.example.chat reason={(3, 4, 6, 10)[i % 4]} (X) subreason=0 "
            "(UNKNOWN) status=0",
            f"          importance=100 pss={100 + i % 900}MB rss=1.{i % 9}GB description=exit {i} "
            "state=empty trace=null",
        ]
    return ("\n".join(lines) + "\n").encode()


# name: (the format the task should record, content generator, units in a first probe)
FAMILIES: dict[str, tuple[str, Callable[[int], bytes], int]] = {
    "snapshot": ("memdash.snapshot", snapshot, 2000),
    "snapshot_repeated": ("memdash.snapshot", snapshot_repeated, 2000),
    "sessions": ("memdash.sessions", sessions, 500),
    "cycles": ("memdash.retain-cycles", cycles, 500),
    "fbat": ("fballocationtracker", fbat, 2000),
    "matrix": ("matrix", matrix, 2000),
    "pprof": ("pprof", pprof, 2000),
    "massif": ("massif", massif, 20),
    "sanitizer": ("sanitizer.leaks", sanitizer, 200),
    "valgrind": ("valgrind.memcheck-log", valgrind, 200),
    "heaptrack": ("heaptrack", lambda n: b"", 0),  # the real sample, whatever the size
    "xcode_leaks": ("xcode.leaks", xcode_leaks, 200),
    "leakcanary": ("leakcanary", leakcanary, 200),
    "exitinfo_text": ("android.exitinfo.text", exitinfo_text, 200),
}
# The app's platform, for the formats of one platform only.
ANDROID_FORMATS = ("leakcanary", "android.exitinfo.text")


def make_input(family: str, size: int, directory: Path) -> tuple[Path, int]:
    """The body file for about `size` bytes of content, and the content's exact size."""
    if family == "heaptrack":
        import zstandard

        content = zstandard.ZstdDecompressor().stream_reader(HEAPTRACK_SAMPLE.open("rb")).read()
        return HEAPTRACK_SAMPLE, len(content)
    _, generate, probe = FAMILIES[family]
    units = max(1, round(probe * size / len(generate(probe))))
    content = generate(units)
    path = directory / f"{family}-{size // MB}mb.gz"
    path.write_bytes(gzip.compress(content, 1, mtime=0))
    return path, len(content)


# ---------------------------------------------------------------------------------------------
# Child: one task


def worker(file: Path, expected_format: str) -> dict[str, Any]:
    from common import setup_django

    setup_django()
    from memdash.core.writes import apps as core_services
    from memdash.ingest.models import Upload
    from memdash.ingest.tasks import process_upload
    from memdash.ingest.writes.uploads import receive_upload

    platform = "android" if expected_format in ANDROID_FORMATS else "ios"
    app = core_services.get_or_create_app("com.example.chat", platform)
    fields = {"build_version": "9.0.0", "build_number": "900"}
    with open(file, "rb") as stream:
        upload, _ = receive_upload(
            app, iter(lambda: stream.read(MB), b""), fields=fields, filename=file.name, run=False
        )
    before = current_rss_bytes()
    upload = process_upload(upload)
    status = proc_status(os.getpid())
    if upload.status != Upload.DONE or upload.format != expected_format:
        raise SystemExit(
            f"{file}: {upload.status} {upload.format}: {upload.error_path}: {upload.error}"
        )
    return {"before": before, "peak": status["VmHWM"], "counts": upload.counts}


# ---------------------------------------------------------------------------------------------
# Harness


def measure(families: list[str], sizes: list[int], var_dir: Path) -> dict[str, Any]:
    inputs = var_dir / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    template = fresh_memdash_database("sqlite", "parse_memory_template", var_dir, "")
    results: dict[str, Any] = {}
    for family in families:
        runs = []
        for size in sizes if family != "heaptrack" else sizes[:1]:
            body, content = make_input(family, size, inputs)
            url = clone_database(template, f"parse_memory_{family}", var_dir, "")
            # The bench measures what a parse costs: no cap on it here.
            env = memdash_env(url, var_dir, MEMDASH_MAX_PARSE_MEMORY_BYTES=str(1 << 50))
            cmd = [PYTHON, str(BENCH / "parse_memory.py"), "worker", "--file", str(body),
                   "--format", FAMILIES[family][0]]  # fmt: skip
            child = run_json(cmd, env)
            used = child["peak"] - child["before"]
            runs.append({"content": content, "body": body.stat().st_size, "used": used,
                         "factor": used / content, "rss_before": child["before"]})  # fmt: skip
            shown = f"{content / MB:.1f} MB content, +{used / MB:.0f} MB"
            log(f"{family}: {shown} ({runs[-1]['factor']:.1f}x)")
        slope = None
        if len(runs) > 1:
            a, b = runs[0], runs[-1]
            slope = (b["used"] - a["used"]) / (b["content"] - a["content"])
        results[family] = {"runs": runs, "slope": slope}
    return results


def table(results: dict[str, Any]) -> str:
    lines = ["| family | content | body | peak over the task's start | × content | marginal × |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for family, result in results.items():
        for run in result["runs"]:
            slope = f"{result['slope']:.1f}" if result["slope"] is not None else "–"
            lines.append(
                f"| {family} | {run['content'] / MB:.1f} MB | {run['body'] / MB:.1f} MB | "
                f"{run['used'] / MB:.0f} MB | {run['factor']:.1f} | {slope} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command")
    child = sub.add_parser("worker")
    child.add_argument("--file", type=Path, required=True)
    child.add_argument("--format", required=True)
    parser.add_argument("--only", default="", help="comma-separated families")
    parser.add_argument("--sizes", default="8,32", help="MB of content, comma-separated")
    parser.add_argument("--var-dir", type=Path, default=ROOT / "var/bench/parse_memory")
    args = parser.parse_args(argv)
    if args.command == "worker":
        emit(worker(args.file, args.format))
        return 0
    families = [f for f in args.only.split(",") if f] or list(FAMILIES)
    sizes = [int(s) * MB for s in args.sizes.split(",")]
    results = measure(families, sizes, args.var_dir)
    print(table(results))
    (args.var_dir / "results.json").write_text(orjson.dumps(results).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
