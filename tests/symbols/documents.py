"""Snapshot documents over chat_cache.elf: one as a device sends it (image build id + address),
one whose frames were already named on the device (the same path by name)."""

from __future__ import annotations

from tests.symbols.helpers import ELF_BUILD_ID

LOAD = 0x5500000000
DECODE = "chat::ImageCache::decode(unsigned char const*, unsigned long)"


def _doc(version: str, captured_at: str, frames: list, stacks: list, rows: list) -> dict:
    return {
        "format": "memdash.snapshot",
        "version": 1,
        "app": {"id": "com.example.chat", "platform": "ios"},
        "build": {"version": version, "number": "1"},
        "captured_at": captured_at,
        "images": [
            {"name": "chat_cache.elf", "uuid": ELF_BUILD_ID, "load_address": hex(LOAD),
             "arch": "x86_64"},
            {"name": "libc.so.6", "system": True, "load_address": "0x7f0000000000"},
        ],
        "frames": frames,
        "stacks": stacks,
        "allocations": rows,
    }  # fmt: skip


def by_address(version: str = "1.0", captured_at: str = "2026-11-20T10:00:00+00:00") -> dict:
    """main → store_image → decode (at two offsets: one in the inlined scaled_size) → libc."""
    frames = [
        {"image": 0, "address": hex(LOAD + 0x11BE)},  # 0 main
        {"image": 0, "address": hex(LOAD + 0x119C)},  # 1 store_image
        {"image": 0, "address": hex(LOAD + 0x116D)},  # 2 decode, in scaled_size (inlined)
        {"image": 0, "address": hex(LOAD + 0x117D)},  # 3 decode
        {"symbol": "malloc", "image": 1},  # 4
        {"symbol": "memcpy", "image": 1},  # 5
    ]
    stacks = [[None, 0], [0, 1], [1, 2], [2, 4], [1, 3], [4, 5]]  # 5: decode (0x117d) → memcpy
    rows = [
        {"category": "Malloc 64 Bytes", "stack": 3, "persistent": 10, "persistent_bytes": 640},
        {"category": "Malloc 64 Bytes", "stack": 5, "persistent": 1, "persistent_bytes": 64},
        {"category": "VM: Stack", "persistent": 1, "persistent_bytes": 16384},
    ]
    return _doc(version, captured_at, frames, stacks, rows)


def by_name(version: str = "1.0", captured_at: str = "2026-11-20T11:00:00+00:00") -> dict:
    """The same path, named on the device (no offsets, no lines)."""
    frames = [
        {"symbol": "main", "image": 0},
        {"symbol": "store_image", "image": 0},
        {"symbol": DECODE, "image": 0},
        {"symbol": "malloc", "image": 1},
    ]
    stacks = [[None, 0], [0, 1], [1, 2], [2, 3]]
    rows = [{"category": "Malloc 64 Bytes", "stack": 3, "persistent": 5, "persistent_bytes": 320}]
    return _doc(version, captured_at, frames, stacks, rows)
