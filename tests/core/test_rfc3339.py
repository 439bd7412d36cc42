"""RFC 3339 §5.6 date-times, the timestamps of every upload format (pure)."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from memdash.core.logic.rfc3339 import parse_rfc3339


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-20T10:12:03Z", datetime(2026, 11, 20, 10, 12, 3, tzinfo=UTC)),
        ("2026-11-20T10:12:03z", datetime(2026, 11, 20, 10, 12, 3, tzinfo=UTC)),
        ("2026-11-20 10:12:03+00:00", datetime(2026, 11, 20, 10, 12, 3, tzinfo=UTC)),
        (
            "2026-11-20T10:12:03.123456789-05:30",  # nanoseconds: microseconds kept
            datetime(2026, 11, 20, 10, 12, 3, 123456, tzinfo=timezone(-timedelta(hours=5.5))),
        ),
        ("1990-12-31T23:59:60Z", datetime(1990, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    ],
)
def test_accepted(text, expected):
    parsed = parse_rfc3339(text)
    assert parsed == expected
    assert parsed.utcoffset() == expected.utcoffset()


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-20T10:12:03",  # no offset
        "2026-11-20",  # no time
        "2026-11-20T10:12Z",  # no seconds
        "2026-W47-5T10:12:03Z",  # week date
        "20261120T101203Z",  # basic format
        "2026-11-20T10:12:03+0000",  # offset without its colon
        "2026-11-20T10:12:03+24:00",  # offset out of range
        "2026-13-01T00:00:00Z",
        "2026-11-20T25:00:00Z",
        "9999-12-31T23:59:59-00:01",  # past year 9999 in UTC
        "0001-01-01T00:00:00+00:01",  # before year 1 in UTC
        "２０２６-11-20T10:12:03Z",  # other digits than ASCII
    ],
)
def test_refused(text):
    with pytest.raises(ValueError):
        parse_rfc3339(text)
