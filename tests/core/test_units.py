"""Units as Instruments prints them: byte sizes and the `Malloc <size>` category names."""

from __future__ import annotations

from memdash.core.logic.units import format_bytes, malloc_category

KIB, MIB, GIB = 1024, 1024**2, 1024**3


def test_format_bytes_in_binary_units():
    assert format_bytes(48) == "48 Bytes"
    assert format_bytes(1536) == "1.50 KiB"
    assert format_bytes(2 * MIB) == "2.00 MiB"
    assert format_bytes(GIB + GIB // 4) == "1.25 GiB"


def test_malloc_category_under_one_kib_counts_bytes():
    assert malloc_category(48) == "Malloc 48 Bytes"
    assert malloc_category(1023) == "Malloc 1023 Bytes"


def test_malloc_category_in_kib():
    assert malloc_category(1024) == "Malloc 1.00 KiB"
    assert malloc_category(1536) == "Malloc 1.50 KiB"  # 1536 / 1024 = 1.5


def test_malloc_category_unit_is_chosen_by_the_exact_size():
    # 1 MiB - 1 = 1,048,575 bytes = 1023.999… KiB, printed with two decimals: still KiB, so the
    # block stays a category apart from the 1 MiB one.
    assert malloc_category(MIB - 1) == "Malloc 1024.00 KiB"
    assert malloc_category(MIB) == "Malloc 1.00 MiB"
    assert malloc_category(2 * MIB) == "Malloc 2.00 MiB"


def test_malloc_category_in_gib_as_instruments_prints_it():
    # One format used to say "Malloc 1024.00 MiB" here; Instruments says GiB.
    assert malloc_category(GIB) == "Malloc 1.00 GiB"
    assert malloc_category(3 * GIB // 2) == "Malloc 1.50 GiB"  # 1,610,612,736 bytes
