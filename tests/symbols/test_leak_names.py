"""Leak stacks named from debug files: LeakSanitizer frames printed as `(module+0x…)` with the
module's BuildId are named when the module's debug file arrives (and at ingest once it is
there), inlined calls become frames of their own, and the leak joins the group of the same leak
reported by name. The names, files and lines are llvm-symbolizer's on the same ELF
(tests/data/symbols/expected.json), printed as LeakSanitizer prints a symbolized stack."""

from __future__ import annotations

import pytest

from memdash.leaks.logic.fingerprint import FINGERPRINT_VERSION
from memdash.leaks.logic.parsers import libmemunreachable, sanitizer
from memdash.leaks.models import LeakGroup, LeakRecord, UnnamedImage
from memdash.triage.models import Status, TriageEvent
from tests.symbols.documents import DECODE
from tests.symbols.helpers import ELF, ELF_BUILD_ID, ELF_DEBUG_ID, symbolizer_frames
from tests.symbols.test_symbolication import post_debug_file

MODULE = "/data/local/tmp/chat_cache.elf"
LOAD = 0x555555554000
MALLOC = "    #0 0x7f3b595f8acb in __interceptor_malloc ??:?"


def by_address(*offsets: int) -> list[str]:
    """The frames LeakSanitizer prints when it cannot symbolize the module."""
    return [
        f"    #{i} 0x{LOAD + offset:x}  ({MODULE}+0x{offset:x}) (BuildId: {ELF_BUILD_ID})"
        for i, offset in enumerate(offsets, start=1)
    ]


def by_name(*offsets: int) -> list[str]:
    """The frames LeakSanitizer prints through llvm-symbolizer: an inlined call is a frame of
    its own at the same address, innermost first."""
    lines = []
    for offset in offsets:
        for function, file, line in reversed(symbolizer_frames("chat_cache.elf", offset)):
            lines.append(f"    #{len(lines) + 1} 0x{LOAD + offset:x} in {function} {file}:{line}:5")
    return lines


def report(*leaks: tuple[int, list[str]]) -> bytes:
    text = ["=================================================================",
            "==4242==ERROR: LeakSanitizer: detected memory leaks", ""]  # fmt: skip
    for size, frames in leaks:
        text += [
            f"Direct leak of {size} byte(s) in 1 object(s) allocated from:",
            MALLOC,
            *frames,
            "",
        ]
    total = sum(size for size, _ in leaks)
    text.append(f"SUMMARY: AddressSanitizer: {total} byte(s) leaked in {len(leaks)} allocation(s).")
    return "\n".join(text).encode() + b"\n"


def send(upload, body: bytes) -> dict:
    response = upload(body, content_type="text/plain", query="build_version=2.0&build_number=7")
    assert response.status_code == 202, response.json()
    assert response.json()["status"] == "done", response.json()
    return response.json()


def groups() -> dict[tuple[str, ...], LeakGroup]:
    return {tuple(g.frame_keys): g for g in LeakGroup.objects.all()}


def at_offsets(*offsets: int) -> tuple[str, ...]:
    return tuple(f"chat_cache.elf+0x{offset:x}" for offset in offsets)


DECODE_PATH = (0x116D, 0x119C, 0x11BE)  # decode (inlined scaled_size) ← store_image ← main
STORE_PATH = (0x119C, 0x11BE)


def test_the_parser_keeps_the_build_id():
    (record,) = sanitizer.parse(report((64, by_address(0x116D)))).reports[0].records
    frame = record.frames[1]
    assert (frame.image, frame.offset, frame.build_id) == (MODULE, 0x116D, ELF_BUILD_ID)
    assert frame.symbol == "" and frame.as_dict()["build_id"] == ELF_BUILD_ID


def test_malloc_debug_frames_keep_their_build_id():
    text = (
        b" Unreachable memory\n  64 bytes in 1 unreachable allocation\n  ABI: 'x86_64'\n\n"
        b"  64 bytes unreachable at 7f12340000\n"
        b"          #00  pc 000000000000116d  /data/local/tmp/chat_cache.elf (BuildId: "
        + ELF_BUILD_ID.encode() + b")\n"
    )  # fmt: skip
    (record,) = libmemunreachable.parse(text).reports[0].records
    (frame,) = record.frames
    assert (frame.symbol, frame.offset, frame.build_id) == ("", 0x116D, ELF_BUILD_ID)


@pytest.mark.django_db
def test_a_debug_file_names_leak_stacks_and_merges_their_groups(
    client, member, app, ingest_secret, upload, django_capture_on_commit_callbacks
):
    send(upload, report((64, by_name(*DECODE_PATH))))
    send(upload, report((64, by_address(*DECODE_PATH)), (32, by_address(*STORE_PATH))))
    keys = tuple(
        f for o in DECODE_PATH for f, _, _ in reversed(symbolizer_frames("chat_cache.elf", o))
    )
    assert keys == ("scaled_size", DECODE, "store_image", "main")
    before = groups()
    # Stacks without a name: each frame their module and offset.
    named, address = before[keys], before[at_offsets(*DECODE_PATH)]
    store_only = before[at_offsets(*STORE_PATH)]
    assert len(before) == 3
    assert set(UnnamedImage.objects.values_list("debug_id", flat=True)) == {ELF_DEBUG_ID}
    # The by-address group was triaged: its decision goes with its leak.
    address.change_triage(member, status=Status.OPEN, notes="seen in CI")

    response = post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.json()

    after = groups()
    assert set(after) == {keys, ("store_image", "main")}
    merged = after[keys]
    assert merged.pk == named.pk and not LeakGroup.objects.filter(pk=address.pk).exists()
    assert (merged.occurrences, merged.bytes) == (2, 128)
    assert merged.status == Status.OPEN and "seen in CI" in merged.notes
    assert TriageEvent.objects.filter(object_id=merged.pk, actor=None).exists()
    # The leak only ever seen by address keeps its group (and its id), now known by name.
    rekeyed = after[("store_image", "main")]
    assert rekeyed.pk == store_only.pk and rekeyed.title == "store_image"
    assert rekeyed.fingerprint_version == FINGERPRINT_VERSION
    # The renamed record: llvm-symbolizer's frames, the inlined call marked, the module kept.
    record = LeakRecord.objects.get(group=merged, bytes=64, frames__icontains=ELF_BUILD_ID)
    frames = [(f.get("symbol"), f.get("file"), f.get("line"), bool(f.get("inlined")))
              for f in record.frames[1:]]  # fmt: skip
    expected = []
    for offset in DECODE_PATH:
        located = symbolizer_frames("chat_cache.elf", offset)
        expected += [(f, file, line, depth > 0) for depth, (f, file, line) in
                     reversed(list(enumerate(located)))]  # fmt: skip
    assert frames == expected
    assert frames[0] == ("scaled_size", "/src/chat_cache.cpp", 15, True)
    assert record.frames[1]["offset"] == "0x116d" and record.frames[1]["image"] == MODULE
    assert not UnnamedImage.objects.exists()

    # A report arriving now is named at ingest: straight into the group.
    body = send(upload, report((64, by_address(*DECODE_PATH))))
    assert body["counts"]["new_groups"] == 0
    assert groups()[keys].occurrences == 3


@pytest.mark.django_db
def test_the_api_says_which_frames_are_named_and_inlined(
    client, api_client, app, ingest_secret, upload, django_capture_on_commit_callbacks
):
    send(upload, report((64, by_address(*DECODE_PATH))))
    post_debug_file(client, app, ingest_secret, ELF, django_capture_on_commit_callbacks)
    group = LeakGroup.objects.get()
    stack = api_client.get(f"/api/v1/leaks/{group.pk}").json()["stack"]
    assert [(f["symbol"], f["symbolicated"], f["inlined"], f["line"]) for f in stack[:3]] == [
        ("__interceptor_malloc", True, False, None),
        ("scaled_size", True, True, 15),
        (DECODE, True, False, 22),
    ]
