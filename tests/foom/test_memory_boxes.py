"""The OS page's memory boxes, sent worked out rather than as their points (issue 34: the page
was 331 KB, most of it the points of two box plots)."""

from __future__ import annotations

from memdash.foom.web.charts.exits import box_stats, memory_by_build_figure


def test_box_stats_are_the_quartiles_and_the_furthest_points_within_the_fences():
    # 1, 2, 3, 4, 100: quartiles at positions 1, 2, 3 -> 2, 3, 4; IQR 2, fences within 3 of
    # them: -1 and 7, so the lower whisker ends at 1 and the upper at 4 (100 is an outlier)
    assert box_stats([100, 3, 1, 4, 2]) == (2, 3, 4, 1, 4)
    # 10, 20: q1 at 0.25 -> 12.5, median 15, q3 17.5; both points within the fences
    assert box_stats([20, 10]) == (12.5, 15, 17.5, 10, 20)
    assert box_stats([7]) == (7, 7, 7, 7, 7)


def test_a_box_per_build_and_device_type_without_its_points():
    rows = [("1.0", "iPhone", 100), ("1.0", "iPhone", 300), ("2.0", "iPhone", 50),
            ("1.0", "iPad", 10)] * 500  # fmt: skip
    figure = memory_by_build_figure(rows, ["1.0", "2.0"], "peak memory")
    ipad, iphone = figure["data"]
    assert (ipad["name"], ipad["x"], ipad["median"]) == ("iPad", ["1.0"], [10])
    # iPhone 1.0: 500 of 100 and 500 of 300: quartiles 100, 200, 300
    assert (iphone["x"], iphone["q1"], iphone["median"], iphone["q3"]) == (
        ["1.0", "2.0"],
        [100, 50],
        [200, 50],
        [300, 50],
    )
    assert "y" not in iphone  # no points: 2,000 of them made four boxes
    assert "over 1000 device-days" in iphone["text"][0]
