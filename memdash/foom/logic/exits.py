"""What the operating system says about how the app's processes ended, beside the heuristic.

Pure: plain data in, plain data out, no Django. Two sources, one vocabulary:

- iOS MetricKit (`MXMetricPayload`): per device and day, cumulative counts of foreground and
  background exits per reason (`cumulativeMemoryResourceLimitExitCount`, …);
- Android `ApplicationExitInfo`: one record per process death with its `reason`, `importance`
  and `description`.

Both become *verdicts* (`memory`, `background_memory`, `crash`, `hang`, `normal`, `update`,
`other`), which the FOOM lens compares with the classes of its rules (`classify.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from memdash.core.logic.numbers import PERCENT_PATTERN
from memdash.foom.logic.classify import Rate

# --- verdicts -------------------------------------------------------------------------------------

MEMORY = "memory"  # killed for memory in the foreground: the OS's own FOOM
BACKGROUND_MEMORY = "background_memory"
CRASH = "crash"
HANG = "hang"  # Android ANR, iOS watchdog
NORMAL = "normal"  # the app or the user ended it
UPDATE = "update"
OTHER = "other"
VERDICTS: tuple[str, ...] = (MEMORY, BACKGROUND_MEMORY, CRASH, HANG, NORMAL, UPDATE, OTHER)
VERDICT_NAMES: dict[str, str] = {
    MEMORY: "memory kill (foreground)",
    BACKGROUND_MEMORY: "memory kill (background)",
    CRASH: "crash",
    HANG: "hang (watchdog, ANR)",
    NORMAL: "normal exit",
    UPDATE: "app updated",
    OTHER: "other",
}

# The heuristic's class that says what each verdict says (`classify.CLASSES`): the pairs the
# count-level agreement compares, day by day.
CLASS_OF_VERDICT: dict[str, str] = {
    MEMORY: "foom",
    BACKGROUND_MEMORY: "background_oom",
    CRASH: "crash",
    HANG: "app_hang",
}
VERDICT_OF_CLASS: dict[str, str] = {cls: verdict for verdict, cls in CLASS_OF_VERDICT.items()}

# --- Android ApplicationExitInfo ------------------------------------------------------------------

# ApplicationExitInfo.REASON_* (android.app.ApplicationExitInfo), by value.
ANDROID_REASONS: dict[int, str] = {
    0: "unknown",
    1: "exit_self",
    2: "signaled",
    3: "low_memory",
    4: "crash",
    5: "crash_native",
    6: "anr",
    7: "initialization_failure",
    8: "permission_change",
    9: "excessive_resource_usage",
    10: "user_requested",
    11: "user_stopped",
    12: "dependency_died",
    13: "other",
    14: "freezer",
    15: "package_state_change",
    16: "package_updated",
}
ANDROID_REASON_CODES: dict[str, int] = {name: code for code, name in ANDROID_REASONS.items()}
ANDROID_VERDICTS: dict[str, str] = {
    "crash": CRASH,
    "crash_native": CRASH,
    "initialization_failure": CRASH,
    "anr": HANG,
    "exit_self": NORMAL,
    "user_requested": NORMAL,
    "user_stopped": NORMAL,
    "package_updated": UPDATE,
}
# ActivityManager.RunningAppProcessInfo.IMPORTANCE_FOREGROUND: the process was on screen.
IMPORTANCE_FOREGROUND = 100
# Android 17's per-app memory limiter kills with REASON_OTHER and a description that starts so
# (`MemoryLimiter:AnonSwap`); the prefix, not the whole text, so later limiter reasons count.
MEMORY_LIMITER_PREFIX = "MemoryLimiter:"


def android_reason_name(text: str) -> str | None:
    """`REASON_LOW_MEMORY`, `low_memory`, `LOW_MEMORY` -> `low_memory`; None if unknown."""
    name = text.strip().lower().removeprefix("reason_")
    return name if name in ANDROID_REASON_CODES else None


def is_foreground_importance(importance: int) -> bool:
    return importance <= IMPORTANCE_FOREGROUND


def is_memory_kill(reason: str, description: str) -> bool:
    """Low memory, or the memory limiter (REASON_OTHER with a `MemoryLimiter:` description)."""
    return reason == "low_memory" or (
        reason == "other" and description.startswith(MEMORY_LIMITER_PREFIX)
    )


def android_verdict(reason: str, description: str, foreground: bool) -> str:
    if is_memory_kill(reason, description):
        return MEMORY if foreground else BACKGROUND_MEMORY
    return ANDROID_VERDICTS.get(reason, OTHER)


# --- iOS MetricKit --------------------------------------------------------------------------------

# MXForegroundExitData / MXBackgroundExitData, as `jsonRepresentation()` names them. Apple
# reports memory-pressure exits (jetsam) in the background data; one in the foreground data is
# still the OS killing the app for memory while on screen, so it is a memory kill there too.
METRICKIT_FOREGROUND: dict[str, str] = {
    "cumulativeNormalAppExitCount": NORMAL,
    "cumulativeMemoryResourceLimitExitCount": MEMORY,
    "cumulativeMemoryPressureExitCount": MEMORY,
    "cumulativeBadAccessExitCount": CRASH,
    "cumulativeIllegalInstructionExitCount": CRASH,
    "cumulativeAbnormalExitCount": CRASH,
    "cumulativeAppWatchdogExitCount": HANG,
    "cumulativeCPUResourceLimitExitCount": OTHER,
}
METRICKIT_BACKGROUND: dict[str, str] = {
    "cumulativeNormalAppExitCount": NORMAL,
    "cumulativeMemoryResourceLimitExitCount": BACKGROUND_MEMORY,
    "cumulativeMemoryPressureExitCount": BACKGROUND_MEMORY,
    "cumulativeBadAccessExitCount": CRASH,
    "cumulativeIllegalInstructionExitCount": CRASH,
    "cumulativeAbnormalExitCount": CRASH,
    "cumulativeAppWatchdogExitCount": HANG,
    "cumulativeCPUResourceLimitExitCount": OTHER,
    "cumulativeSuspendedWithLockedFileExitCount": OTHER,
    "cumulativeBackgroundTaskAssertionTimeoutExitCount": OTHER,
    "cumulativeBackgroundURLSessionCompletionTimeoutExitCount": OTHER,
    "cumulativeBackgroundFetchCompletionTimeoutExitCount": OTHER,
}


def metrickit_verdict(key: str, foreground: bool) -> str:
    """A reason key of the exit data; one memdash does not know yet counts as `other`."""
    known = METRICKIT_FOREGROUND if foreground else METRICKIT_BACKGROUND
    return known.get(key, OTHER)


def verdict_counts(reasons: dict[str, int], foreground: bool) -> dict[str, int]:
    """Exit counts per reason key -> counts per verdict (only verdicts with exits)."""
    counts: dict[str, int] = {}
    for key, n in reasons.items():
        if n:
            verdict = metrickit_verdict(key, foreground)
            counts[verdict] = counts.get(verdict, 0) + n
    return counts


# --- what an upload reports, checked --------------------------------------------------------------


@dataclass(frozen=True)
class MetricKitReport:
    """One MXMetricPayload, checked: the window, the build and device, the exit counts per
    reason key, and the memory metrics in bytes."""

    path: str  # JSON path of the payload in its upload ("" for a lone payload)
    digest: str  # of the payload's JSON: the same payload sent twice is stored once
    build_version: str
    build_number: str
    device_type: str
    os_version: str
    architecture: str
    begins_at: datetime
    ends_at: datetime
    foreground: dict[str, int]
    background: dict[str, int]
    peak_memory_bytes: int | None = None
    suspended_memory_bytes: int | None = None  # the average over the window's samples
    suspended_samples: int | None = None

    @property
    def day(self) -> date:
        return window_day(self.begins_at, self.ends_at)


def window_day(begins_at: datetime, ends_at: datetime) -> date:
    """The UTC day a window mostly covers: that of its middle. MetricKit's daily windows start
    near midnight in the device's time zone (23:00 UTC for a device at UTC+1)."""
    middle = begins_at + (ends_at - begins_at) / 2
    return middle.astimezone(UTC).date()


@dataclass(frozen=True)
class ProcessExitReport:
    """One ApplicationExitInfo, checked."""

    path: str
    pid: int
    process_name: str
    reason: str  # ANDROID_REASONS name
    description: str
    importance: int
    timestamp: datetime
    pss_kb: int | None = None
    rss_kb: int | None = None
    status: int | None = None
    session_id: str = ""  # from processStateSummary, when the app recorded its run's id there

    @property
    def foreground(self) -> bool:
        return is_foreground_importance(self.importance)

    @property
    def verdict(self) -> str:
        return android_verdict(self.reason, self.description, self.foreground)


# --- matching an Android exit to its run ----------------------------------------------------------

# A run's own clock gives both times, so they may differ only by what passes between the last
# heartbeat and the death being recorded.
CLOCK_SLACK = timedelta(minutes=1)
MAX_RUN_SPAN = timedelta(days=7)  # a process that lived longer than this is not matched


@dataclass(frozen=True)
class RunCandidate:
    """A run that may be the one an exit ended: same app, same pid."""

    pk: int
    started_at: datetime
    last_seen_at: datetime | None
    device_key: str


def match_exit(
    timestamp: datetime, device_key: str, candidates: list[RunCandidate]
) -> RunCandidate | None:
    """The run an exit ended: of the runs with the exit's pid (and device, when the exit's is
    known), the last one started at or before the exit that had not been seen alive after it
    and started at most MAX_RUN_SPAN before it. pids are reused, but not within one device's
    few minutes, and an app's runs seldom share one."""
    best: RunCandidate | None = None
    for run in candidates:
        if device_key and run.device_key and run.device_key != device_key:
            continue
        if run.started_at > timestamp + CLOCK_SLACK:
            continue
        if timestamp - run.started_at > MAX_RUN_SPAN:
            continue
        if run.last_seen_at is not None and run.last_seen_at > timestamp + CLOCK_SLACK:
            continue  # seen alive after this death: another process with the same pid
        if best is None or (run.started_at, run.pk) > (best.started_at, best.pk):
            best = run
    return best


# --- agreement ------------------------------------------------------------------------------------


@dataclass
class RuleAgreement:
    """How the heuristic's results of one rule compare with what the OS said.

    `false_fooms`: the rule called a FOOM that the OS called something else; `missed`: the OS
    reported a foreground memory kill that the rule called something else. From matched runs
    (Android) these are counts of runs; from daily counts (iOS) they are the least numbers the
    counts allow (a day with 5 FOOMs and 3 memory kills has at least 2 false FOOMs), shared
    between the rules of that day's FOOMs in proportion to their FOOMs."""

    rule: int
    compared: float = 0  # runs (or, from counts, FOOMs and memory kills) compared
    fooms: float = 0  # the rule's FOOMs among them
    os_memory: float = 0  # of them, memory kills by the OS's word
    false_fooms: float = 0
    missed: float = 0
    other_verdicts: dict[str, int] = field(default_factory=dict)  # what the OS said instead

    @property
    def false_share(self) -> float | None:
        return self.false_fooms / self.fooms if self.fooms else None


@dataclass(frozen=True)
class MatchedExit:
    """A run matched to its exit: the run's class and rule, and the exit's verdict."""

    cls: str
    rule: int | None
    verdict: str


def agreement_from_matches(matches: list[MatchedExit]) -> list[RuleAgreement]:
    """Per rule, from runs matched to their exits (pending runs are not compared)."""
    rows: dict[int, RuleAgreement] = {}
    for m in matches:
        if m.rule is None:
            continue
        row = rows.setdefault(m.rule, RuleAgreement(m.rule))
        row.compared += 1
        heuristic_foom = m.cls == "foom"
        os_memory = m.verdict == MEMORY
        row.fooms += heuristic_foom
        row.os_memory += os_memory
        if heuristic_foom and not os_memory:
            row.false_fooms += 1
            row.other_verdicts[m.verdict] = row.other_verdicts.get(m.verdict, 0) + 1
        elif os_memory and not heuristic_foom:
            row.missed += 1
    return [rows[rule] for rule in sorted(rows)]


@dataclass(frozen=True)
class DayCounts:
    """One build's day: the heuristic's FOOMs per rule, and the OS's foreground memory kills."""

    day: date
    fooms_by_rule: dict[int, int]
    os_memory: int


def agreement_from_counts(days: list[DayCounts]) -> list[RuleAgreement]:
    """Per rule, from counts per day (iOS: MetricKit says how many, never which run). On each
    day min(FOOMs, memory kills) may agree; the surplus of either side is at least that many
    disagreements. The FOOM surplus goes to the rules in proportion to their FOOMs that day;
    memory kills beyond the FOOMs are missed by rules the counts cannot name (rule 0)."""
    rows: dict[int, RuleAgreement] = {}
    for d in days:
        fooms = sum(d.fooms_by_rule.values())
        surplus = max(0, fooms - d.os_memory)
        agreed = min(fooms, d.os_memory)
        for rule, n in d.fooms_by_rule.items():
            if not n:
                continue
            row = rows.setdefault(rule, RuleAgreement(rule))
            share = n / fooms
            row.compared += n
            row.fooms += n
            row.os_memory += agreed * share
            row.false_fooms += surplus * share
        if d.os_memory > fooms:
            row = rows.setdefault(0, RuleAgreement(0))
            row.compared += d.os_memory - fooms
            row.os_memory += d.os_memory - fooms
            row.missed += d.os_memory - fooms
    return [rows[rule] for rule in sorted(rows)]


@dataclass(frozen=True)
class ClassComparison:
    """One of the heuristic's classes against the OS's verdict that says the same, by counts
    per day: how many each side counted, and the least disagreements either way."""

    cls: str
    verdict: str
    heuristic: int
    os: int
    heuristic_surplus: int  # Σ max(0, heuristic − OS) over the days
    os_surplus: int  # Σ max(0, OS − heuristic)


def compare_classes(
    days: list[tuple[dict[str, int], dict[str, int]]],
) -> list[ClassComparison]:
    """(heuristic class counts, OS foreground+background verdict counts) per day -> per class."""
    rows = []
    for verdict, cls in CLASS_OF_VERDICT.items():
        h = o = h_surplus = o_surplus = 0
        for classes, verdicts in days:
            hd, od = classes.get(cls, 0), verdicts.get(verdict, 0)
            h, o = h + hd, o + od
            h_surplus += max(0, hd - od)
            o_surplus += max(0, od - hd)
        rows.append(ClassComparison(cls, verdict, h, o, h_surplus, o_surplus))
    return rows


# --- the CI gate ----------------------------------------------------------------------------------

BAND = "band"


def parse_os_rate_limit(text: str) -> float | None:
    """`band` -> None (judge by the 95% bands); `0.5%` -> 0.005 (a ceiling, 0% to 100%, as
    `PERCENT_PATTERN` says it). ValueError else."""
    text = text.strip()
    if text == BAND:
        return None
    if re.fullmatch(PERCENT_PATTERN, text):
        return float(text[:-1]) / 100
    raise ValueError(f"must be 'band' or a percentage like 0.5%, got {text!r}")


def os_rate_failure(base: Rate | None, target: Rate | None, ceiling: float | None) -> str:
    """Why the target build fails the gate on the OS-reported foreground memory-kill rate, or ''.

    With a ceiling: the target's rate is above it. Without (`band`): the target's rate is
    higher than the base's beyond both 95% Wilson intervals (its lower bound above the base's
    upper bound), so a rise within the noise of two samples never fails a build."""
    if target is None:
        return ""
    if ceiling is not None:
        if target.rate > ceiling:
            return f"{target.rate:.2%} is above the limit of {ceiling:.2%}"
        return ""
    if base is not None and target.low > base.high:
        return (
            f"{target.rate:.2%} (95%: {target.low:.2%} – {target.high:.2%}) is above the base's "
            f"{base.rate:.2%} (95%: {base.low:.2%} – {base.high:.2%}) beyond both intervals"
        )
    return ""
