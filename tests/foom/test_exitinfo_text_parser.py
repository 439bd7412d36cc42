"""`dumpsys activity exit-info` and `ApplicationExitInfo.toString()` text read as plain data (no
database): the real API 34 dump's records as it printed them, the hand-written forms, refusals."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from memdash.core.logic.errors import InvalidUpload
from memdash.foom.logic.exitinfo_text import looks_like, parse, read_size_kb, split_fields

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "exitinfo"


def text(name: str) -> str:
    return (SAMPLES / name).read_text()


def test_the_api_34_dump_three_lines_a_record():
    parsed = parse(text("dumpsys_exit_info_api34.txt"))
    assert parsed.form == "dumpsys" and parsed.packages == ["com.example.otel_zone_example"]
    assert parsed.persisted == "2026-10-08 22:49:04.298"
    first, second, crash = parsed.exits
    assert (first.line, first.pid, first.reason, first.importance) == (5, 8297, 10, 100)
    assert first.local_time == datetime(2026, 10, 8, 22, 49, 31, 375000)
    assert first.description == "stop com.example.otel_zone_example due to from pid 8396"
    assert (first.pss_kb, first.rss_kb, first.status) == (0, 0, 0)
    assert second.pid == 8180
    # `reason=5 (APP CRASH(NATIVE))`: the number counts, the name has parentheses of its own
    assert (crash.pid, crash.reason, crash.status, crash.description) == (8036, 5, 11, "crash")
    assert crash.fields["state"] == "46 bytes"


def test_sizes_as_the_dump_rounds_them():
    parsed = parse(text("dumpsys_exit_info_api34_previous_install.txt"))
    force_stop = parsed.exits[1]
    # `pss=208MB rss=289MB`: sizeValueToString of bytes, read back in KiB
    assert (force_stop.pss_kb, force_stop.rss_kb) == (208 * 1024, 289 * 1024)
    assert read_size_kb("1.2GB", "pss", "line 1") == 1258291  # 1.2 × 1024 × 1024
    assert read_size_kb("0,00", "pss", "line 1") == 0  # a device's decimal comma
    assert read_size_kb("812", "pss", "line 1") == 1  # bytes


def test_one_field_a_line_and_a_description_with_spaces():
    exits = parse(text("handwritten_dumpsys_one_field_a_line.txt")).exits
    assert [(e.pid, e.reason, e.importance) for e in exits] == [
        (21877, 3, 100),
        (20412, 13, 100),
        (19233, 6, 300),
    ]
    assert exits[1].description == "MemoryLimiter:AnonSwap"
    assert exits[2].process == "com.example.chat:sync"
    assert exits[2].description == "Input dispatching timed out"


def test_to_string_in_logcat_to_the_minute():
    parsed = parse(text("handwritten_tostring_logcat.txt"))
    assert parsed.form == "toString"
    first, second = parsed.exits
    assert (first.local_time, first.to_the_minute) == (datetime(2026, 10, 23, 14, 30), True)
    assert second.local_time == datetime(2026, 10, 23, 11, 2)
    assert first.pss_kb == 1258291


def test_vendor_fields_delimit_the_values():
    fields = split_fields(
        "timestamp=10/23/26, 2:30 PM pid=11190 process=com.x reason=10 (USER REQUESTED) "
        "status=0 recentTaskInfo=0 adj=0 procState=TOP  swapPss=0,00 importance=100 "
        "pss=0,00 rss=618MB description=stop com.x due to from pid 23995 state=empty trace=null"
    )
    assert fields["status"] == "0" and fields["pss"] == "0,00" and fields["rss"] == "618MB"
    assert fields["description"] == "stop com.x due to from pid 23995"


@pytest.mark.parametrize(
    ("pasted", "line", "words"),
    [
        ("ApplicationExitInfo #0:\n  pid=1 process=com.x reason=3 importance=100\n", 1,
         "without `timestamp=`"),
        ("ApplicationExitInfo #0:\n  timestamp=2026-10-23 10:00:00.000 pid=x process=com.x "
         "reason=3 importance=100\n", 1, "`pid=` must be a number"),
        ("x ApplicationExitInfo(timestamp=23.10.26, 14:30 pid=1 process=com.x reason=3 "
         "importance=100)\n", 1, "cannot read the timestamp"),
        ("ApplicationExitInfo #0:\n  timestamp=2026-10-23 10:00:00.000 pid=1 process=com.x "
         "reason=3 importance=100 pss=lots\n", 1, "must be a size"),
        ("ACTIVITY MANAGER PROCESS EXIT INFO (dumpsys activity exit-info)\n", 1,
         "no ApplicationExitInfo record"),
    ],
)  # fmt: skip
def test_malformed_records_are_refused_at_their_line(pasted: str, line: int, words: str):
    with pytest.raises(InvalidUpload) as caught:
        parse(pasted)
    assert caught.value.path == f"line {line}" and words in caught.value.message


def test_detection():
    assert looks_like(text("dumpsys_exit_info_api34.txt").encode())
    assert looks_like(text("handwritten_tostring_logcat.txt").encode())
    assert not looks_like(b'[{"pid": 1}]')
