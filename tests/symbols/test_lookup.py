"""memdash names the same function, file and line as llvm-symbolizer (and addr2line) at each
offset of real debug files from gcc, clang and dsymutil, and of a hand-written Breakpad .sym of
the same ELF, inlined calls included (tests/data/symbols/PROVENANCE.md)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
import symbolic

from memdash.core.logic.errors import InvalidUpload
from memdash.symbols.logic.lookup import demangle, locate, normalize_debug_id
from memdash.symbols.logic.objects import inventory, read_objects
from memdash.symbols.models import DebugFile
from memdash.symbols.reads import Symbolicator
from tests.symbols.helpers import (
    BREAKPAD,
    DSYM_ZIP,
    ELF,
    ELF_BUILD_ID,
    ELF_DEBUG_ID,
    MACHO_OBJECT,
    SYMTAB_ELF,
    symbolizer_frames,
)

ELF_OFFSETS = [0x1162, 0x116D, 0x1176, 0x117D, 0x119C, 0x11BE]


def named(cache: symbolic.SymCache, offset: int) -> list[tuple[str, str, int | None]]:
    return [(f.function, f.file, f.line) for f in locate(cache, offset, "chat_cache")]


def only_object(path: Path, tmp_path: Path, name: str = ""):
    found = read_objects(path, path, path.name, "elf", name, tmp_path)
    assert len(found) == 1
    return found[0], symbolic.SymCache.open(str(found[0].symcache))


@pytest.mark.parametrize("offset", ELF_OFFSETS, ids=hex)
def test_elf_with_dwarf_names_as_llvm_symbolizer(tmp_path, offset):
    obj, cache = only_object(ELF, tmp_path)
    assert (obj.debug_id, obj.code_id, obj.arch) == (ELF_DEBUG_ID, ELF_BUILD_ID, "x86_64")
    assert named(cache, offset) == symbolizer_frames("chat_cache.elf", offset)


def test_the_inlined_call_is_its_own_frame(tmp_path):
    _, cache = only_object(ELF, tmp_path)
    frames = locate(cache, 0x116D, "chat_cache")
    # llvm-symbolizer: scaled_size at chat_cache.cpp:15, inlined into decode at line 22
    assert [(f.function, f.line, f.inlined) for f in frames] == [
        ("chat::ImageCache::decode(unsigned char const*, unsigned long)", 22, False),
        ("scaled_size", 15, True),
    ]


@pytest.mark.parametrize("offset", ELF_OFFSETS, ids=hex)
def test_stripped_elf_names_functions_without_lines(tmp_path, offset):
    obj, cache = only_object(SYMTAB_ELF, tmp_path)
    assert obj.features == ["symtab", "unwind"] or "debug" not in obj.features
    # llvm-symbolizer on the stripped file: the function of the symbol table, `??:0`
    assert named(cache, offset) == [
        (symbolizer_frames("chat_cache.symtab.elf", offset)[0][0], "", None)
    ]


@pytest.mark.parametrize("offset", ELF_OFFSETS, ids=hex)
def test_handwritten_breakpad_sym_names_as_llvm_symbolizer_on_the_elf(tmp_path, offset):
    found = read_objects(BREAKPAD, BREAKPAD, BREAKPAD.name, "breakpad", "", tmp_path)
    assert [(o.debug_id, o.code_id, o.image_name, o.kind) for o in found] == [
        (ELF_DEBUG_ID, ELF_BUILD_ID, "chat_cache.elf", "breakpad")
    ]
    cache = symbolic.SymCache.open(str(found[0].symcache))
    assert named(cache, offset) == symbolizer_frames("chat_cache.elf", offset)


@pytest.mark.parametrize("offset", [0x20, 0x28, 0x2C, 0x60, 0x84], ids=hex)
def test_macho_object_from_clang_names_as_llvm_symbolizer(offset):
    obj = next(symbolic.Archive.open(str(MACHO_OBJECT)).iter_objects())
    assert (obj.arch, obj.file_format, "debug" in obj.features) == ("arm64", "macho", True)
    assert named(obj.make_symcache(), offset) == symbolizer_frames("chat_cache.arm64.o", offset)


def test_a_macho_object_without_uuid_cannot_be_matched_to_frames(tmp_path):
    with pytest.raises(InvalidUpload, match="an object file has no UUID"):
        read_objects(MACHO_OBJECT, MACHO_OBJECT, MACHO_OBJECT.name, "macho", "", tmp_path)


@pytest.mark.parametrize("arch", ["arm64", "x86_64"])
@pytest.mark.parametrize("offset", [0x4D8, 0x4E8, 0x4F0, 0x4F4, 0x528, 0x54C], ids=hex)
def test_fat_dsym_gives_one_object_per_architecture(tmp_path, arch, offset):
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(DSYM_ZIP) as zipped:
        zipped.extractall(unpacked)
    caches = tmp_path / "caches"
    caches.mkdir()
    found = {o.arch: o for o in inventory(unpacked, caches).objects}
    assert sorted(found) == ["arm64", "x86_64"]
    assert {o.kind for o in found.values()} == {"dsym"}
    assert {o.image_name for o in found.values()} == {"libchat_cache.dylib"}
    cache = symbolic.SymCache.open(str(found[arch].symcache))
    assert named(cache, offset) == symbolizer_frames(f"libchat_cache.dylib.dSYM/{arch}", offset)


def test_names_are_demangled_cpp_and_swift():
    # c++filt/llvm-cxxfilt give the first; the second is Swift's own mangling of
    # Chat.ChatViewController.viewDidLoad() (swift-demangle prints it so).
    assert demangle("_ZN4chat10ImageCache6decodeEPKhm") == (
        "chat::ImageCache::decode(unsigned char const*, unsigned long)"
    )
    assert demangle("$s4Chat0A14ViewControllerC11viewDidLoadyyF") == (
        "Chat.ChatViewController.viewDidLoad() -> ()"
    )
    assert (
        demangle("-[ChatImageCache storeImage:forKey:]") == "-[ChatImageCache storeImage:forKey:]"
    )


def test_image_ids_in_every_spelling_are_one():
    assert normalize_debug_id("8FB83F1EB03EBA1D1F81CDF2F040A42C0") == ELF_DEBUG_ID  # Breakpad
    assert normalize_debug_id(ELF_BUILD_ID) == ELF_DEBUG_ID  # GNU build id
    assert normalize_debug_id(ELF_DEBUG_ID.upper()) == ELF_DEBUG_ID
    assert normalize_debug_id("Chat") == ""


def test_a_debug_file_whose_symcache_is_gone_leaves_its_frames_unnamed(tmp_path, settings):
    """A symcache lost from the media storage (or damaged) must not fail the pages that name
    frames (a MetricKit diagnostic, a leak report): its image's frames stay unnamed."""
    settings.MEDIA_ROOT = str(tmp_path)
    (tmp_path / "damaged.symcache").write_bytes(b"not a symcache")
    resolve = Symbolicator(
        {
            "gone": DebugFile(symcache_path="gone.symcache", image_name="Chat"),
            "damaged": DebugFile(symcache_path="damaged.symcache", image_name="Chat"),
        }
    )
    assert resolve("gone", 0x1F00) == ()
    assert resolve("damaged", 0x1F00) == ()
