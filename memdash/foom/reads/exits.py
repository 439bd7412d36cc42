"""Reads of what the OS says about the app's exits: rates per build and per day from the
pre-aggregated counts, the agreement with the heuristic per build and rule, the memory
distributions of MetricKit, and the CI gate's figures."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date

from django.db.models import Count, Exists, OuterRef, Q

from memdash.core.models import App, Build
from memdash.core.reads.apps import builds_in_release_order
from memdash.foom.logic.classify import EXCLUDED, FOOM, PENDING, Rate, rate_with_interval
from memdash.foom.logic.exits import (
    BACKGROUND_MEMORY,
    MEMORY,
    ClassComparison,
    DayCounts,
    MatchedExit,
    RuleAgreement,
    agreement_from_counts,
    agreement_from_matches,
    compare_classes,
    os_rate_failure,
    parse_os_rate_limit,
)
from memdash.foom.models import (
    BuildDayFoomStats,
    BuildFoomStats,
    MetricKitPayload,
    OsExitDayStats,
    ProcessExit,
    Session,
)
from memdash.foom.reads.rates import FoomCountsView, day_trend

SOURCE_NAMES = dict(OsExitDayStats.SOURCES)
MAX_MEMORY_POINTS = 20_000


@dataclass
class OsCounts:
    """What the OS reported of a build's (or a day's) exits, summed over days."""

    sources: set[str] = field(default_factory=set)
    reports: int = 0
    foreground_exits: int = 0
    foreground_memory: int = 0
    background_exits: int = 0
    background_memory: int = 0
    foreground: dict[str, int] = field(default_factory=dict)
    background: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, row: OsExitDayStats) -> None:
        self.sources.add(row.source)
        self.reports += row.reports
        self.foreground_exits += row.foreground_exits
        self.foreground_memory += row.foreground_memory
        self.background_exits += row.background_exits
        self.background_memory += row.background_memory
        for mine, theirs in ((self.foreground, row.foreground), (self.background, row.background)):
            for verdict, n in theirs.items():
                mine[verdict] = mine.get(verdict, 0) + n
        for side, reasons in row.reasons.items():
            mine = self.reasons.setdefault(side, {})
            for reason, n in reasons.items():
                mine[reason] = mine.get(reason, 0) + n

    @property
    def memory_rate(self) -> Rate | None:
        """Foreground memory kills per foreground exit, with its 95% Wilson interval: the OS's
        own FOOM rate per session, beside the heuristic's FOOMs per foreground end."""
        return rate_with_interval(self.foreground_memory, self.foreground_exits)

    @property
    def background_rate(self) -> Rate | None:
        return rate_with_interval(self.background_memory, self.background_exits)

    @property
    def source_names(self) -> str:
        return ", ".join(SOURCE_NAMES[s] for s in sorted(self.sources))

    def sorted_reasons(self, side: str) -> list[tuple[str, int]]:
        return sorted(self.reasons.get(side, {}).items(), key=lambda kv: (-kv[1], kv[0]))


def os_counts_by_build(app: App) -> dict[int, OsCounts]:
    """Build id -> what the OS reported of its exits (builds without any are absent)."""
    counts: dict[int, OsCounts] = defaultdict(OsCounts)
    for row in OsExitDayStats.objects.filter(app=app).order_by("build_id", "day", "source"):
        counts[row.build_id].add(row)
    return dict(counts)


def os_counts_of_build(build: Build) -> OsCounts | None:
    rows = list(OsExitDayStats.objects.filter(build=build))
    if not rows:
        return None
    counts = OsCounts()
    for row in rows:
        counts.add(row)
    return counts


def os_memory_rate(build: Build) -> Rate | None:
    """The build's OS-reported foreground memory kills per foreground exit (95% Wilson)."""
    counts = os_counts_of_build(build)
    return counts.memory_rate if counts else None


@dataclass(frozen=True)
class OsRateCheck:
    """The CI gate on the OS-reported rate (`memdash_check --max-os-foom-rate`, the compare
    API's `max_os_foom_rate`): both builds' rates and why the target fails ('' if it passes)."""

    base: Rate | None
    target: Rate | None
    ceiling: float | None  # None: judged by the 95% bands
    failure: str

    @property
    def judged(self) -> bool:
        """False when the figures are too few to judge: the target (or, by the bands, the base)
        has no OS-reported foreground exit."""
        return self.target is not None and (self.ceiling is not None or self.base is not None)


def os_rate_check(base: Build, target: Build, limit: str) -> OsRateCheck:
    """`limit` is `band` or a percentage like `0.5%` (ValueError otherwise)."""
    ceiling = parse_os_rate_limit(limit)
    rates = os_memory_rate(base), os_memory_rate(target)
    return OsRateCheck(*rates, ceiling, os_rate_failure(*rates, ceiling))


def os_day_trend(app: App, build: Build | None = None) -> list[tuple[date, OsCounts]]:
    """Per UTC day (of a MetricKit window's middle, of an exit's time), over all builds or one."""
    rows = OsExitDayStats.objects.filter(app=app)
    if build is not None:
        rows = rows.filter(build=build)
    days: dict[date, OsCounts] = defaultdict(OsCounts)
    for row in rows.order_by("day", "build_id", "source"):
        days[row.day].add(row)
    return sorted(days.items())


@dataclass(frozen=True)
class DayRates:
    """A day of the FOOM trend: the heuristic's counts of the runs started that day and what
    the OS reported of it, either None where it has nothing."""

    day: date
    heuristic: FoomCountsView | None
    os: OsCounts | None


def foom_and_os_days(app: App, build: Build | None = None) -> list[DayRates]:
    """Every day with runs or OS-reported exits, over all builds or one, in order."""
    heuristic = {d.day: d.counts for d in day_trend(app, build)}
    os_days = dict(os_day_trend(app, build))
    return [
        DayRates(day, heuristic.get(day), os_days.get(day))
        for day in sorted(set(heuristic) | set(os_days))
    ]


@dataclass(frozen=True)
class OsBuildRow:
    build: Build
    counts: OsCounts
    heuristic: Rate | None  # the heuristic's FOOM rate per session (classify's Rate)


def os_build_rows(app: App) -> list[OsBuildRow]:
    """Builds with OS-reported exits, in release order, with the heuristic's rate beside."""
    counts = os_counts_by_build(app)
    if not counts:
        return []
    heuristic = {
        build_id: rate_with_interval(foom, rate_sessions)
        for build_id, foom, rate_sessions in BuildFoomStats.objects.filter(app=app).values_list(
            "build_id", "foom", "rate_sessions"
        )
    }
    return [
        OsBuildRow(build, counts[build.pk], heuristic.get(build.pk))
        for build in builds_in_release_order(app)
        if build.pk in counts
    ]


# --- agreement -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BuildAgreement:
    """How the heuristic and the OS agree on one build's runs."""

    build: Build
    basis: str  # MATCHED (Android), SAME_DEVICES or ALL_RUNS (iOS MetricKit)
    rules: list[RuleAgreement]
    classes: list[ClassComparison]  # iOS: each class against its verdict, day by day
    days: int = 0  # days compared (iOS)
    bound_days: int = 0  # of them, days compared over all the build's runs (ALL_RUNS)

    @property
    def bound(self) -> bool:
        """The figures compare MetricKit's devices with every device's runs on some day: false
        FOOMs may be overstated (FOOMs of devices that send no MetricKit count) and missed
        memory kills understated."""
        return self.bound_days > 0

    @property
    def fooms(self) -> float:
        return sum(r.fooms for r in self.rules)

    @property
    def false_fooms(self) -> float:
        return sum(r.false_fooms for r in self.rules)

    @property
    def missed(self) -> float:
        return sum(r.missed for r in self.rules)

    @property
    def os_memory(self) -> float:
        return sum(r.os_memory for r in self.rules)

    @property
    def false_share(self) -> float | None:
        return self.false_fooms / self.fooms if self.fooms else None

    @property
    def missed_share(self) -> float | None:
        return self.missed / self.os_memory if self.os_memory else None


MATCHED = "matched runs"
SAME_DEVICES = "counts per day, same devices"
ALL_RUNS = "counts per day, all runs (a bound)"


def agreement_by_build(app: App) -> list[BuildAgreement]:
    """Per build with OS data, in release order: Android exits matched to their runs, or iOS
    MetricKit counts against the heuristic's classes on the days both cover."""
    matched = _matched_exits(app)
    daily = _daily_comparisons(app)
    rows = []
    for build in builds_in_release_order(app):
        if build.pk in matched:
            rows.append(
                BuildAgreement(build, MATCHED, agreement_from_matches(matched[build.pk]), [])
            )
        elif build.pk in daily:
            d = daily[build.pk]
            rows.append(
                BuildAgreement(
                    build,
                    ALL_RUNS if d.bound_days else SAME_DEVICES,
                    agreement_from_counts(d.days),
                    compare_classes(d.classes),
                    days=len(d.days),
                    bound_days=d.bound_days,
                )
            )
    return rows


def _matched_exits(app: App) -> dict[int, list[MatchedExit]]:
    """Build id -> its exits matched to classified runs (one GROUP BY over the join)."""
    grouped = (
        ProcessExit.objects.filter(app=app, session__isnull=False)
        .exclude(session__classification=PENDING)
        .filter(session__classification__isnull=False)  # a run deleted since: no match
        .values("build_id", "verdict", "session__classification", "session__rule")
        .annotate(n=Count("pk"))
        .order_by()
    )
    matched: dict[int, list[MatchedExit]] = defaultdict(list)
    for row in grouped:
        exit_ = MatchedExit(row["session__classification"], row["session__rule"], row["verdict"])
        matched[row["build_id"]].extend([exit_] * row["n"])
    return dict(matched)


@dataclass
class DailyComparison:
    """A build's days compared: FOOMs per rule and OS memory kills, class counts and OS
    verdicts, and how many days compared all the build's runs."""

    days: list[DayCounts] = field(default_factory=list)
    classes: list[tuple[dict[str, int], dict[str, int]]] = field(default_factory=list)
    bound_days: int = 0


def _daily_comparisons(app: App) -> dict[int, DailyComparison]:
    """Build id -> its days where both the runs and MetricKit have something of the build.

    MetricKit comes only from devices whose users share analytics with developers. On a day
    whose payloads all came with their device's id, the runs compared are those devices' runs
    of the build that day; on a day with a payload that named no device, every run of the build
    that day is compared (a bound: the other devices' FOOMs have no OS counterpart)."""
    os_days: dict[tuple[int, date], dict[str, int]] = {}
    os_memory: dict[tuple[int, date], int] = {}
    for row in OsExitDayStats.objects.filter(app=app, source=OsExitDayStats.METRICKIT):
        key = (row.build_id, row.day)
        verdicts = dict(row.foreground)
        for verdict, n in row.background.items():
            verdicts[verdict] = verdicts.get(verdict, 0) + n
        os_days[key], os_memory[key] = verdicts, row.foreground_memory
    if not os_days:
        return {}
    keyed = {
        (group["build_id"], group["day"])
        for group in MetricKitPayload.objects.filter(app=app)
        .values("build_id", "day")
        .annotate(unkeyed=Count("pk", filter=Q(device_key="")))
        .order_by()
        if not group["unkeyed"]
    }
    classes, rules = _all_runs(app, {k for k in os_days if k not in keyed})
    same_classes, same_rules = _payload_devices_runs(app, keyed)
    classes.update(same_classes)
    rules.update(same_rules)
    result: dict[int, DailyComparison] = {}
    for key in sorted(classes):
        build_id, day = key
        comparison = result.setdefault(build_id, DailyComparison())
        comparison.days.append(DayCounts(day, rules.get(key, {}), os_memory[key]))
        comparison.classes.append((classes[key], os_days[key]))
        comparison.bound_days += key not in keyed
    return result


DayClasses = dict[tuple[int, date], dict[str, int]]  # (build, day) -> class -> runs
DayRules = dict[tuple[int, date], dict[int, int]]  # (build, day) -> rule -> FOOMs


def _all_runs(app: App, days: set[tuple[int, date]]) -> tuple[DayClasses, DayRules]:
    """Class counts and FOOMs per rule of every run of these (build, day) pairs, the days with
    classified runs only."""
    if not days:
        return {}, {}
    builds = {b for b, _ in days}
    classes = {
        (row.build_id, row.day): dict(row.classes)
        for row in BuildDayFoomStats.objects.filter(app=app, build_id__in=builds)
        if (row.build_id, row.day) in days and row.classified
    }
    rules: DayRules = defaultdict(dict)
    fooms = (
        Session.objects.filter(build_id__in=builds, classification=FOOM)
        .values("build_id", "started_day", "rule")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for group in fooms:
        key = (group["build_id"], group["started_day"])
        if key in classes and group["rule"] is not None:  # a FOOM always has its rule
            rules[key][group["rule"]] = group["n"]
    return classes, dict(rules)


def _payload_devices_runs(app: App, days: set[tuple[int, date]]) -> tuple[DayClasses, DayRules]:
    """The same, of only the runs whose device sent a MetricKit payload of the build and day
    (one GROUP BY; the payload found by the build and day index)."""
    if not days:
        return {}, {}
    has_payload = MetricKitPayload.objects.filter(
        app=app,
        build_id=OuterRef("build_id"),
        day=OuterRef("started_day"),
        device_key=OuterRef("device__device_key"),
    )
    grouped = (
        Session.objects.filter(
            app=app, build_id__in={b for b, _ in days}, started_day__in={d for _, d in days}
        )
        .filter(Exists(has_payload))
        .values("build_id", "started_day", "classification", "rule")
        .annotate(n=Count("pk"))
        .order_by()
    )
    classes: DayClasses = defaultdict(dict)
    rules: DayRules = defaultdict(dict)
    classified: set[tuple[int, date]] = set()
    for group in grouped:
        key = (group["build_id"], group["started_day"])
        if key not in days:
            continue
        cls, n = group["classification"], group["n"]
        classes[key][cls] = classes[key].get(cls, 0) + n
        if cls not in (PENDING, EXCLUDED):
            classified.add(key)
        if cls == FOOM and group["rule"] is not None:
            rules[key][group["rule"]] = rules[key].get(group["rule"], 0) + n
    return {k: v for k, v in classes.items() if k in classified}, {
        k: v for k, v in rules.items() if k in classified
    }


# --- memory --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryPoint:
    build_id: int
    device_type: str
    peak_bytes: int | None
    suspended_bytes: int | None


def memory_points(app: App) -> list[MemoryPoint]:
    """MetricKit's peak and average suspended memory, one point per payload (a device's day),
    the newest payloads first, capped."""
    rows = (
        MetricKitPayload.objects.filter(app=app)
        .order_by("-day", "-id")
        .values_list("build_id", "device_type", "peak_memory_bytes", "suspended_memory_bytes")
    )
    return [
        MemoryPoint(build_id, device_type or "unknown device", peak, suspended)
        for build_id, device_type, peak, suspended in rows[:MAX_MEMORY_POINTS]
        if peak is not None or suspended is not None
    ]


def memory_killed_pss(app: App) -> list[tuple[int, bool, int]]:
    """(build id, foreground?, PSS in KiB) of the Android processes killed for memory, the
    newest first, capped."""
    rows = (
        ProcessExit.objects.filter(app=app, verdict__in=(MEMORY, BACKGROUND_MEMORY))
        .exclude(pss_kb__isnull=True)
        .order_by("-timestamp")
        .values_list("build_id", "foreground", "pss_kb")
    )
    return [(b, front, pss) for b, front, pss in rows[:MAX_MEMORY_POINTS] if pss is not None]
