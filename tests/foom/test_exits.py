"""The pure side of the OS's word (memdash/foom/logic/exits.py): verdicts, the day of a MetricKit
window, matching an exit to its run, agreement per rule, and the CI gate's judgement. No
database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from memdash.foom.logic.classify import rate_with_interval
from memdash.foom.logic.exits import (
    BACKGROUND_MEMORY,
    CRASH,
    HANG,
    MEMORY,
    NORMAL,
    OTHER,
    DayCounts,
    MatchedExit,
    RunCandidate,
    agreement_from_counts,
    agreement_from_matches,
    android_reason_name,
    android_verdict,
    compare_classes,
    match_exit,
    os_rate_failure,
    parse_os_rate_limit,
    verdict_counts,
    window_day,
)

T = datetime(2026, 10, 23, 11, 0, tzinfo=UTC)


def test_android_reasons_by_name_in_any_spelling():
    assert android_reason_name("REASON_LOW_MEMORY") == "low_memory"
    assert android_reason_name("low_memory") == "low_memory"
    assert android_reason_name(" Reason_Anr ") == "anr"
    assert android_reason_name("REASON_SOMETHING_NEW") is None


def test_the_memory_limiter_is_a_memory_kill_by_its_prefix():
    # Android 17's limiter: REASON_OTHER with "MemoryLimiter:…"; a later limiter reason counts too
    assert android_verdict("other", "MemoryLimiter:AnonSwap", foreground=True) == MEMORY
    assert android_verdict("other", "MemoryLimiter:FileCache", foreground=True) == MEMORY
    assert android_verdict("other", "MemoryLimiter:AnonSwap", foreground=False) == BACKGROUND_MEMORY
    # REASON_OTHER with another description is no memory kill, nor is the prefix elsewhere
    assert android_verdict("other", "killed by the system", foreground=True) == OTHER
    assert android_verdict("other", "not a MemoryLimiter:AnonSwap", foreground=True) == OTHER
    assert android_verdict("low_memory", "", foreground=True) == MEMORY
    assert android_verdict("low_memory", "", foreground=False) == BACKGROUND_MEMORY
    assert android_verdict("anr", "", foreground=True) == HANG
    assert android_verdict("crash_native", "", foreground=True) == CRASH
    assert android_verdict("user_requested", "", foreground=True) == NORMAL
    assert android_verdict("signaled", "", foreground=True) == OTHER


def test_metrickit_counts_become_verdicts():
    foreground = {
        "cumulativeMemoryResourceLimitExitCount": 2,
        "cumulativeBadAccessExitCount": 1,
        "cumulativeAbnormalExitCount": 3,
        "cumulativeAppWatchdogExitCount": 1,
        "cumulativeNormalAppExitCount": 5,
        "cumulativeFutureExitCount": 4,  # a reason memdash does not know yet: other
        "cumulativeIllegalInstructionExitCount": 0,  # no exits: no verdict
    }
    # crash: bad access 1 + abnormal 3 = 4
    assert verdict_counts(foreground, foreground=True) == {
        MEMORY: 2, CRASH: 4, HANG: 1, NORMAL: 5, OTHER: 4,
    }  # fmt: skip
    background = {
        "cumulativeMemoryResourceLimitExitCount": 1,
        "cumulativeMemoryPressureExitCount": 3,
        "cumulativeBackgroundTaskAssertionTimeoutExitCount": 2,
    }
    # in the background both the limit and the pressure are memory kills: 1 + 3 = 4
    assert verdict_counts(background, foreground=False) == {BACKGROUND_MEMORY: 4, OTHER: 2}


def test_a_memory_pressure_exit_in_the_foreground_is_a_memory_kill():
    # Apple reports jetsam (memory pressure) in the background data; in the foreground data it is
    # still the OS killing the app for memory while on screen: the OS's own FOOM, 2 + 3 = 5
    foreground = {
        "cumulativeMemoryPressureExitCount": 2,
        "cumulativeMemoryResourceLimitExitCount": 3,
        "cumulativeCPUResourceLimitExitCount": 1,
    }
    assert verdict_counts(foreground, foreground=True) == {MEMORY: 5, OTHER: 1}


def test_a_window_belongs_to_the_day_of_its_middle():
    # a device at UTC+1: its day runs 23:00 to 22:59 UTC; the middle is 10:59:30 on the 23rd
    begins = datetime(2026, 10, 22, 23, 0, tzinfo=UTC)
    assert window_day(begins, begins + timedelta(hours=23, minutes=59)) == date(2026, 10, 23)
    # a UTC device: 00:00 to 23:59 of the same day
    midnight = datetime(2026, 10, 23, tzinfo=UTC)
    assert window_day(midnight, midnight + timedelta(hours=23, minutes=59)) == date(2026, 10, 23)


def run(pk, started_h_before, seen_h_before=None, device="D1"):
    seen = T - timedelta(hours=seen_h_before) if seen_h_before is not None else None
    return RunCandidate(pk, T - timedelta(hours=started_h_before), seen, device)


def test_an_exit_ends_the_last_run_started_before_it():
    older, newer = run(1, 30, 29), run(2, 2, 0.5)
    assert match_exit(T, "D1", [older, newer]) == newer
    # started after the exit (beyond a minute of clock slack): another process
    assert match_exit(T, "D1", [run(3, -0.5)]) is None
    assert match_exit(T, "D1", [run(4, -0.01)]).pk == 4  # 36 s after: within the slack
    # seen alive an hour after this death: the pid belonged to another process then
    assert match_exit(T, "D1", [run(5, 3, -1)]) is None
    # older than a week: not matched
    assert match_exit(T, "D1", [run(6, 24 * 7 + 1)]) is None
    # another device's run with the same pid, when both devices are known
    assert match_exit(T, "D1", [run(7, 2, device="D2")]) is None
    assert match_exit(T, "", [run(8, 2, device="D2")]).pk == 8


def test_agreement_from_matched_runs_per_rule():
    matches = [
        MatchedExit("foom", 15, MEMORY),
        MatchedExit("foom", 15, HANG),  # rule 15 called an ANR a FOOM
        MatchedExit("foom", 15, HANG),
        MatchedExit("foom", 15, CRASH),
        MatchedExit("foom", 1, MEMORY),
        MatchedExit("os_kill", 2, MEMORY),  # the memory limiter, called os_kill by rule 2
        MatchedExit("crash", 3, CRASH),
        MatchedExit("pending", None, MEMORY),  # not classified: not compared
    ]
    rows = {r.rule: r for r in agreement_from_matches(matches)}
    assert sorted(rows) == [1, 2, 3, 15]
    r15 = rows[15]
    # 4 runs, all FOOMs, one a memory kill by the OS: 3 false FOOMs (2 hangs, 1 crash)
    assert (r15.compared, r15.fooms, r15.os_memory, r15.false_fooms, r15.missed) == (4, 4, 1, 3, 0)
    assert r15.other_verdicts == {HANG: 2, CRASH: 1}
    assert r15.false_share == 0.75  # 3 / 4
    assert (rows[2].fooms, rows[2].false_fooms, rows[2].missed) == (0, 0, 1)
    assert (rows[1].false_fooms, rows[1].missed) == (0, 0)
    assert rows[3].false_share is None  # no FOOMs to be wrong about


def test_agreement_from_daily_counts():
    days = [
        # 5 FOOMs (4 by rule 15, 1 by rule 1), 3 memory kills: at least 2 false FOOMs, shared
        # 4/5 and 1/5: rule 15 gets 2 × 4/5 = 1.6, rule 1 gets 2 × 1/5 = 0.4
        DayCounts(date(2026, 10, 23), {15: 4, 1: 1}, os_memory=3),
        # 1 FOOM, 4 memory kills: 3 missed by rules the counts cannot name (rule 0)
        DayCounts(date(2026, 10, 24), {15: 1}, os_memory=4),
    ]
    rows = {r.rule: r for r in agreement_from_counts(days)}
    r15 = rows[15]
    assert r15.fooms == 5  # 4 + 1
    assert r15.false_fooms == pytest.approx(1.6)  # 1.6 + 0 on the second day
    # agreed: min(5, 3) = 3 shared 4/5 → 2.4, and min(1, 4) = 1 all rule 15's → 3.4
    assert r15.os_memory == pytest.approx(3.4)
    assert rows[1].false_fooms == pytest.approx(0.4)
    assert (rows[0].missed, rows[0].os_memory, rows[0].fooms) == (3, 3, 0)


def test_classes_against_verdicts_day_by_day():
    days = [
        ({"foom": 3, "crash": 1}, {MEMORY: 1, CRASH: 2, HANG: 1}),
        ({"foom": 0, "app_hang": 2}, {MEMORY: 2}),
    ]
    rows = {row.cls: row for row in compare_classes(days)}
    # foom: day 1 3 vs 1 → heuristic +2; day 2 0 vs 2 → OS +2
    assert (rows["foom"].heuristic, rows["foom"].os) == (3, 3)
    assert (rows["foom"].heuristic_surplus, rows["foom"].os_surplus) == (2, 2)
    # app_hang: day 1 0 vs 1 → OS +1; day 2 2 vs 0 → heuristic +2
    assert (rows["app_hang"].heuristic_surplus, rows["app_hang"].os_surplus) == (2, 1)
    assert (rows["crash"].heuristic, rows["crash"].os, rows["crash"].os_surplus) == (1, 2, 1)


def test_the_gate_limit_is_band_or_a_percentage():
    assert parse_os_rate_limit("band") is None
    assert parse_os_rate_limit("0.5%") == pytest.approx(0.005)
    for bad in ("5", "abc%", "150%", "-1%"):
        with pytest.raises(ValueError):
            parse_os_rate_limit(bad)


def test_the_gate_fails_beyond_both_bands_or_above_a_ceiling():
    # Wilson, z = 1.95996, z² = 3.84146, n = 100, 1 + z²/n = 1.0384146:
    # 1 of 100: centre (0.01 + 0.0192073) / 1.0384146 = 0.028127,
    #   half 1.887454 × sqrt(0.0000990 + 0.0000960) = 0.026360 → 0.00177 … 0.05449
    # 10 of 100: centre (0.1 + 0.0192073) / 1.0384146 = 0.114799,
    #   half 1.887454 × sqrt(0.0009 + 0.0000960) = 0.059568 → 0.05523 … 0.17437
    base, target = rate_with_interval(1, 100), rate_with_interval(10, 100)
    assert base.high == pytest.approx(0.05449, abs=1e-5)
    assert target.low == pytest.approx(0.05523, abs=1e-5)
    assert "beyond both intervals" in os_rate_failure(base, target, None)  # 0.05523 > 0.05449
    # 9 of 100: low 0.04808 < 0.05449, within the noise of the two samples
    assert os_rate_failure(base, rate_with_interval(9, 100), None) == ""
    assert os_rate_failure(base, target, 0.10) == ""  # 10% is not above 10%
    assert os_rate_failure(None, target, 0.05) == "10.00% is above the limit of 5.00%"
    assert os_rate_failure(base, None, None) == ""  # nothing reported: nothing to judge
