"""Trends' series by build and by capture day, and the range of capture days (pure)."""

from datetime import date

from memdash.compare.logic.trends import DateRange, Sample, by_build, by_day, within

NOV = {d: date(2026, 11, d) for d in range(1, 31)}  # NOV[d] is 2026-11-d

SAMPLES = [
    # build 2 released after build 1, but its first snapshot came first
    Sample(build_id=2, day=NOV[18], total=500, categories={"Cache": 100}),
    Sample(build_id=1, day=NOV[19], total=100, categories={"Cache": 10}),
    Sample(build_id=1, day=NOV[19], total=300, categories={}),
    Sample(build_id=1, day=NOV[20], total=200, categories={"Cache": 30}),
    Sample(build_id=2, day=NOV[21], total=700, categories={"Cache": 300}),
]


def test_by_build_follows_the_release_order_given():
    points = by_build(SAMPLES, [1, 2, 3], ["Cache"])
    # build 3 has no snapshot: no point
    assert [p.key for p in points] == [1, 2]
    assert [p.snapshots for p in points] == [3, 2]
    # build 1: 100, 200, 300 → median 200; build 2: 500, 700 → median 600
    assert [p.total.median for p in points] == [200, 600]
    # a snapshot without the category counts 0: 0, 10, 30 → median 10; 100, 300 → 200
    assert [p.categories["Cache"].median for p in points] == [10, 200]
    assert (points[0].total.minimum, points[0].total.maximum) == (100, 300)


def test_by_day_is_oldest_first_whatever_the_build():
    points = by_day(SAMPLES, [])
    assert [p.key for p in points] == [NOV[18], NOV[19], NOV[20], NOV[21]]
    assert [p.snapshots for p in points] == [1, 2, 1, 1]
    # 19 Nov: 100 and 300 → median 200
    assert [p.total.median for p in points] == [500, 200, 200, 700]
    assert points[0].categories == {}


def test_a_range_keeps_both_ends():
    kept = within(SAMPLES, DateRange(NOV[19], NOV[20]))
    assert [(s.day, s.total) for s in kept] == [(NOV[19], 100), (NOV[19], 300), (NOV[20], 200)]
    # one end open
    assert [s.total for s in within(SAMPLES, DateRange(start=NOV[21]))] == [700]
    assert [s.total for s in within(SAMPLES, DateRange(end=NOV[18]))] == [500]
    # no limits: everything, and the range says it has none
    assert within(SAMPLES, DateRange()) == SAMPLES
    assert not DateRange() and DateRange(end=NOV[1])


def test_nothing_in_the_range_gives_no_points():
    kept = within(SAMPLES, DateRange(NOV[1], NOV[2]))
    assert kept == []
    assert by_day(kept, ["Cache"]) == [] and by_build(kept, [1, 2], ["Cache"]) == []
