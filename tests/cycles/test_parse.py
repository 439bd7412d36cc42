"""The parser on the detector's printed sample and on the JSON form (retain-cycles-v1)."""

import copy
from pathlib import Path

import pytest

from memdash.core.logic.errors import InvalidUpload
from memdash.cycles.logic.parse import (
    looks_like_printed_cycles,
    parse_json_document,
    parse_printed_cycles,
    reduce_class_name,
)
from tests.samples import retain_cycles_example

# FBRetainCycleDetector's printed format (provenance in tests/data/PROVENANCE.md).
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "cycles" / "nslog_cycles.txt"

BLOCK = "__NSMallocBlock__"


def test_sample_has_six_cycles_one_dropped_as_freed():
    parsed = parse_printed_cycles(SAMPLE.read_bytes())
    # The sample README: six cycles, one with freed (null) objects -> 5 kept + 1 dropped.
    assert len(parsed.cycles) == 5
    assert parsed.dropped == 1


def test_sample_cycles_in_printed_order_with_via_paths():
    parsed = parse_printed_cycles(SAMPLE.read_bytes())
    uikit, chat, chat_input, timer, profile = parsed.cycles
    assert uikit == (
        ("UITransitionView", ("_containerView",)),
        (
            "_UIFullscreenPresentationController",
            ("__presentationControllerToNotifyOnLayoutSubviews",),
        ),
    )
    assert chat == (
        ("ChatViewController", ()),
        ("ChatDataSource", ("_dataSource",)),
        (BLOCK, ("_onUpdate",)),
    )
    assert chat_input == (
        ("ChatInputBar", ("_inputBar",)),
        ("ChatViewController", ("_delegate",)),
        ("ChatDataSource", ("_dataSource",)),
        (BLOCK, ("_onUpdate",)),
    )
    assert timer == (
        ("VoiceNotePlayer", ("_player",)),
        ("__NSCFTimer", ("_timer",)),
        ("VoiceNoteCell", ("_target",)),
    )
    # `<<__NSMallocBlock__:0x1c2a3b4c>>` is reduced to its class, so block types group.
    assert profile == (
        (BLOCK, ()),
        ("ProfileHeaderView", ("_observer",)),
        ("AvatarLoader", ("_avatarLoader",)),
        (BLOCK, ("_completion",)),
    )


def test_detects_the_printed_form_only():
    assert looks_like_printed_cycles(SAMPLE.read_bytes())
    assert looks_like_printed_cycles(b"{(\n)}\n")
    assert not looks_like_printed_cycles(b'{"format": "memdash.retain-cycles"}')
    assert not looks_like_printed_cycles(b"==123==ERROR: LeakSanitizer: detected memory leaks")


def test_nslog_header_and_empty_set():
    text = (
        '2026-11-20 10:12:03.123 Chat[812:4411] {(\n    (\n    "-> A ",\n    "-> _b -> B "\n)\n)}'
    )
    parsed = parse_printed_cycles(text)
    assert parsed.cycles == [(("A", ()), ("B", ("_b",)))]
    assert parse_printed_cycles("{(\n)}").cycles == []


def test_block_address_reduction():
    assert reduce_class_name("<<__NSMallocBlock__:0x1c2a3b4c>>") == BLOCK
    assert reduce_class_name("<<__NSStackBlock__:0xDEADBEEF>>") == "__NSStackBlock__"
    assert reduce_class_name("ChatViewController") == "ChatViewController"


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        ('{(\n  (\n  "-> A ",\n  "B "\n  )\n)}', "line 4", 'must start with "-> "'),
        ('{(\n  (\n  "-> A ",\n  "-> B \n  )\n)}', "line 4", "unterminated"),
        ('{(\n  (\n  "-> A "\n  \n', "line 5", "end early"),
        ("hello", "line 1", "unexpected character"),
        ('{(\n  (\n  "-> A "\n  )\n)}\nmore', "line 6", "unexpected character"),
        ('{(\n  (\n  "-> _x ->  "\n  )\n)}', "line 3", "class must not be empty"),
    ],
)
def test_printed_errors_name_the_line(text, path, message):
    with pytest.raises(InvalidUpload) as caught:
        parse_printed_cycles(text)
    assert caught.value.path == path
    assert message in caught.value.message


# The spec example's cycle with its block printed with an address, and a transient cycle.
PARSE_CYCLES = [
    [
        {"class": "ChatViewController", "via": []},
        {"class": "ChatDataSource", "via": ["_dataSource"]},
        {"class": "<<__NSMallocBlock__:0xabc>>", "via": ["_onUpdate"]},
    ],
    [{"class": "(null)", "via": []}, {"class": "Foo", "via": ["_x"]}],
]


def _doc(**overrides):
    return retain_cycles_example(**{"cycles": copy.deepcopy(PARSE_CYCLES), **overrides})


def test_json_document_from_the_spec():
    parsed = parse_json_document(_doc())
    assert (parsed.build_version, parsed.build_number, parsed.device_id) == (
        "8.0.51",
        "2741",
        "A1B2",
    )
    assert parsed.captured_at.isoformat() == "2026-11-20T10:12:03+00:00"
    assert parsed.parsed.cycles == [
        (
            ("ChatViewController", ()),
            ("ChatDataSource", ("_dataSource",)),
            (BLOCK, ("_onUpdate",)),
        )
    ]
    assert parsed.parsed.dropped == 1


@pytest.mark.parametrize(
    ("overrides", "path"),
    [
        ({"version": 2}, "version"),
        ({"cycles": {}}, "cycles"),
        ({"cycles": [[]]}, "cycles[0]"),
        ({"cycles": [["A"]]}, "cycles[0][0]"),
        (
            {"cycles": [[{"class": "A", "via": []}, {"class": 3, "via": []}]]},
            "cycles[0][1].class",
        ),
        ({"cycles": [[{"class": "A", "via": "x"}]]}, "cycles[0][0].via"),
        ({"cycles": [[{"class": "A", "via": ["ok", ""]}]]}, "cycles[0][0].via[1]"),
        ({"captured_at": "yesterday"}, "captured_at"),
        ({"captured_at": "2026-11-20T10:12:03"}, "captured_at"),
        ({"build": {"version": 8}}, "build.version"),
        ({"device": "A1B2"}, "device"),
    ],
)
def test_json_errors_name_the_path(overrides, path):
    with pytest.raises(InvalidUpload) as caught:
        parse_json_document(_doc(**overrides))
    assert caught.value.path == path
