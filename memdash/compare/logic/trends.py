"""Trends' series (pure, no Django): snapshots' persistent bytes grouped build after build or
day after day (the snapshots' capture dates), kept to a range of capture dates."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

from memdash.compare.logic.stats import Spread, describe

AXES = ("build", "date")  # the x axis: release order of builds, or capture dates
SCALES = ("linear", "log")  # the y axis


@dataclass(frozen=True)
class Sample:
    """One snapshot: its build, capture day, persistent bytes, and the persistent bytes of the
    chosen categories it has (a category it lacks counts as 0)."""

    build_id: int
    day: date
    total: int
    categories: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class DateRange:
    """Capture days from `start` to `end`, both included; an open end has no limit."""

    start: date | None = None
    end: date | None = None

    def __contains__(self, day: date) -> bool:
        return (self.start is None or self.start <= day) and (self.end is None or day <= self.end)

    def __bool__(self) -> bool:
        return self.start is not None or self.end is not None


@dataclass(frozen=True)
class SeriesPoint:
    """One x of the chart: a build's id or a day, its snapshots' spreads."""

    key: Hashable
    snapshots: int
    total: Spread
    categories: dict[str, Spread]


def within(samples: Iterable[Sample], days: DateRange) -> list[Sample]:
    """The samples captured inside the range, in their order."""
    return [s for s in samples if s.day in days]


def by_build(
    samples: Iterable[Sample], build_order: Sequence[int], categories: Sequence[str]
) -> list[SeriesPoint]:
    """A point per build that has samples, in the given (release) order."""
    return _grouped(samples, lambda s: s.build_id, build_order, categories)


def by_day(samples: Iterable[Sample], categories: Sequence[str]) -> list[SeriesPoint]:
    """A point per capture day that has samples, oldest first."""
    samples = list(samples)
    return _grouped(samples, lambda s: s.day, sorted({s.day for s in samples}), categories)


def _grouped[K: Hashable](
    samples: Iterable[Sample],
    key_of: Callable[[Sample], K],
    order: Sequence[K],
    categories: Sequence[str],
) -> list[SeriesPoint]:
    groups: dict[K, list[Sample]] = {}
    for sample in samples:
        groups.setdefault(key_of(sample), []).append(sample)
    points = []
    for key in order:
        group = groups.get(key)
        if not group:
            continue
        points.append(
            SeriesPoint(
                key=key,
                snapshots=len(group),
                total=describe([s.total for s in group]),
                categories={
                    name: describe([s.categories.get(name, 0) for s in group])
                    for name in categories
                },
            )
        )
    return points
