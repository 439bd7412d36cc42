"""How a run of the app ended, decided on the server by elimination (sessions-v1).

Pure: plain data in, plain data out, no Django. The rules read what a run recorded about its last
moments (`EndFacts`) and what its successor on the same device looked like when it started; the
first rule of the table that matches wins, and every result names the rule and the rules version,
so a later version of the rules can re-classify the history and tell which results it changed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import get_args

from memdash.foom.logic.contract import State

RULES_VERSION = "foom-2026.11"

# The classes a session can end up in. `pending` is not a result of the rules: it means "not yet".
FOOM = "foom"
BACKGROUND_OOM = "background_oom"
CRASH = "crash"
APP_HANG = "app_hang"
USER_QUIT = "user_quit"
EXIT = "exit"
APP_UPGRADE = "app_upgrade"
OS_UPGRADE = "os_upgrade"
REBOOT = "reboot"
EXCLUDED = "excluded"
THERMAL_KILL = "thermal_kill"
INACTIVE_KILL = "inactive_kill"
OS_KILL = "os_kill"
PENDING = "pending"

# In the order the pages stack and list them.
CLASSES: tuple[str, ...] = (
    FOOM,
    BACKGROUND_OOM,
    CRASH,
    APP_HANG,
    USER_QUIT,
    EXIT,
    APP_UPGRADE,
    OS_UPGRADE,
    REBOOT,
    THERMAL_KILL,
    INACTIVE_KILL,
    OS_KILL,
    EXCLUDED,
    PENDING,
)

# Words of a class name written as the pages write them (the rest stay lower case).
_ABBREVIATIONS = {"foom": "FOOM", "oom": "OOM", "os": "OS"}


def class_label(cls: str) -> str:
    """A class as the pages and legends name it: `background_oom` -> "background OOM",
    `user_quit` -> "user quit", `os_kill` -> "OS kill" (the API and CSV keep the names)."""
    return " ".join(_ABBREVIATIONS.get(word, word) for word in cls.split("_"))


STATES: tuple[str, ...] = get_args(State)  # the sessions format's (contract.py)
FOREGROUND = "foreground"

# Rule 2: exit reasons reported by the OS itself (Android's ApplicationExitInfo.REASON_*, in
# lower case without the prefix). `low_memory` is rule 1. A reason the OS reports that is not
# listed here still decides the class directly (the spec: "when present it decides the class"):
# the run was ended by the OS for a stated reason that is neither memory nor the app's doing,
# so it becomes `os_kill` and never counts as a FOOM.
OS_EXIT_REASON_CLASSES: dict[str, str] = {
    "crash": CRASH,
    "crash_native": CRASH,
    "initialization_failure": CRASH,
    "anr": APP_HANG,
    "exit_self": EXIT,
    "user_requested": USER_QUIT,
    "user_stopped": USER_QUIT,  # force-stopped from the system settings
    "package_updated": APP_UPGRADE,
    # signaled, permission_change, excessive_resource_usage, dependency_died, freezer,
    # package_state_change, other, unknown, and any future reason -> OS_KILL
}
LOW_MEMORY = "low_memory"

# Rule 14: how long the app must have been active before a foreground state is believed.
MIN_RELIABLE_ACTIVE_MS = 1000

RULES: dict[int, str] = {
    1: "os_exit_reason is low_memory",
    2: "another os_exit_reason",
    3: "crashed",
    4: "main thread blocked while foreground",
    5: "user quit",
    6: "exit called",
    7: "next run has another build or binary",
    8: "next run has another OS version",
    9: "next run has another boot time",
    10: "debugger, simulator, extension or bot",
    11: "thermal state critical",
    12: "ended in background or suspended",
    13: "ended inactive",
    14: "foreground for less than a second, or its end never arrived",
    15: "none of the above",
}
# What each rule means, in a few words, for the pages (RULES says how it is decided).
RULE_NAMES: dict[int, str] = {
    1: "Low memory, says the OS",
    2: "Another reason the OS gave",
    3: "Crashed",
    4: "App hung",
    5: "User quit",
    6: "App exited",
    7: "App updated",
    8: "OS updated",
    9: "Device restarted",
    10: "Debug or test run",
    11: "Overheated",
    12: "Killed in background",
    13: "Killed while inactive",
    14: "Too short or cut off",
    15: "Killed in foreground, no other cause",
}


# The yes/no facts of a run's end (EndFacts' booleans, the Session columns of the same names,
# the keys of a session's `end` object), in the order sessions-v1 lists them.
END_FLAGS = (
    "crashed",
    "main_thread_blocked",
    "user_quit",
    "exit_called",
    "debugger",
    "simulator",
    "extension",
    "thermal_critical",
)


@dataclass(frozen=True)
class EndFacts:
    """What a run recorded about its last moments (the `end` object of a session)."""

    state: str
    active_for_ms: int | None = None  # None: not reported
    crashed: bool = False
    main_thread_blocked: bool = False
    user_quit: bool = False
    exit_called: bool = False
    debugger: bool = False
    simulator: bool = False
    extension: bool = False
    thermal_critical: bool = False
    os_exit_reason: str | None = None
    memory_warnings: int | None = None
    footprint_bytes: int | None = None
    peak_footprint_bytes: int | None = None


@dataclass(frozen=True)
class RunFacts:
    """What the rules compare between a run and its successor, plus the run's own end."""

    build_version: str
    build_number: str = ""
    binary_uuid: str = ""
    os: str = ""
    boot_time: datetime | None = None
    bot: bool = False
    end: EndFacts | None = None


@dataclass(frozen=True)
class Classification:
    cls: str
    rule: int | None  # None only for `pending`
    rules_version: str = RULES_VERSION


def _differs(mine: object, theirs: object) -> bool:
    """A fact differs only when both runs reported it: a missing value proves nothing."""
    return mine not in (None, "") and theirs not in (None, "") and mine != theirs


def _class_for_os_exit_reason(reason: str, state: str) -> tuple[str, int]:
    if reason == LOW_MEMORY:
        return (FOOM if state == FOREGROUND else BACKGROUND_OOM), 1
    return OS_EXIT_REASON_CLASSES.get(reason, OS_KILL), 2


def is_ready(has_successor: bool, has_end: bool, grace_passed: bool) -> bool:
    """A run is classified once its successor is known, or once its end is known and the grace
    period (for runs that never get a successor) has passed."""
    return has_successor or (has_end and grace_passed)


def classify_session(
    run: RunFacts, successor: RunFacts | None, grace_passed: bool
) -> Classification:
    """The class of one run, the number of the rule that decided it, and the rules version.

    `successor` is the next run of the same device by `started_at` (None while none is known).
    `grace_passed` says whether the run is older than the grace period.

    A run whose successor exists but whose `end` never arrived has no known state: the rules that
    read `end` cannot match, the successor rules (7-9) and the bot part of rule 10 still can, and
    otherwise it is excluded under rule 14 (its state is not reliable), never counted as a FOOM.
    A run that did not report `active_for_ms` is not known to have been active for less than a
    second, so rule 14 does not match it.
    """
    end = run.end
    if not is_ready(successor is not None, end is not None, grace_passed):
        return Classification(PENDING, None)

    if end is not None:
        if end.os_exit_reason:
            return Classification(*_class_for_os_exit_reason(end.os_exit_reason, end.state))
        if end.crashed:
            return Classification(CRASH, 3)
        if end.main_thread_blocked and end.state == FOREGROUND:
            return Classification(APP_HANG, 4)
        if end.user_quit:
            return Classification(USER_QUIT, 5)
        if end.exit_called:
            return Classification(EXIT, 6)

    if successor is not None:
        if _differs(
            (run.build_version, run.build_number),
            (successor.build_version, successor.build_number),
        ) or _differs(run.binary_uuid, successor.binary_uuid):
            return Classification(APP_UPGRADE, 7)
        if _differs(run.os, successor.os):
            return Classification(OS_UPGRADE, 8)
        if _differs(run.boot_time, successor.boot_time):
            return Classification(REBOOT, 9)

    if run.bot or (end is not None and (end.debugger or end.simulator or end.extension)):
        return Classification(EXCLUDED, 10)
    if end is None:
        return Classification(EXCLUDED, 14)
    if end.thermal_critical:
        return Classification(THERMAL_KILL, 11)
    if end.state in ("background", "suspended"):
        return Classification(BACKGROUND_OOM, 12)
    if end.state == "inactive":
        return Classification(INACTIVE_KILL, 13)
    if end.active_for_ms is not None and end.active_for_ms < MIN_RELIABLE_ACTIVE_MS:
        return Classification(EXCLUDED, 14)
    return Classification(FOOM, 15)


# --- rates -------------------------------------------------------------------------------------

Z_95 = 1.959963984540054  # the 97.5% quantile of the standard normal distribution


@dataclass(frozen=True)
class Rate:
    successes: int
    trials: int
    rate: float
    low: float
    high: float


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion.

    With p = x/n:  centre = (p + z²/2n) / (1 + z²/n),
                   half   = z / (1 + z²/n) · sqrt(p(1-p)/n + z²/4n²).
    Unlike p ± z·sqrt(p(1-p)/n) it stays inside [0, 1] and does not collapse to a point at 0 FOOMs,
    which is the common case for a healthy build.
    """
    if trials <= 0:
        raise ValueError("an interval needs at least one trial")
    if not 0 <= successes <= trials:
        raise ValueError(f"successes must be within 0..{trials}, got {successes}")
    n = float(trials)
    p = successes / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denominator
    half = (z / denominator) * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    # The exact bounds at x = 0 and x = n are 0 and 1; rounding must not push them outside.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def rate_with_interval(successes: int, trials: int) -> Rate | None:
    """successes / trials with its 95% Wilson interval; None when there is nothing to divide."""
    if trials <= 0:
        return None
    low, high = wilson_interval(successes, trials)
    return Rate(successes, trials, successes / trials, low, high)
