"""The rule table of sessions-v1 (rules `foom-2026.11`), one case per row; the Wilson interval."""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import UTC, datetime

import pytest

from memdash.foom.logic.classify import (
    END_FLAGS,
    RULES,
    RULES_VERSION,
    Classification,
    EndFacts,
    RunFacts,
    classify_session,
    rate_with_interval,
    wilson_interval,
)

BOOT = datetime(2026, 11, 20, 6, 58, 10, tzinfo=UTC)

# A run that ends in the foreground after 91 s with nothing else to explain it: a FOOM (rule 15).
PLAIN_END = EndFacts(state="foreground", active_for_ms=91_000, memory_warnings=3)
RUN = RunFacts(
    build_version="8.0.51",
    build_number="2741",
    binary_uuid="6A1F0C2D",
    os="17.4.1",
    boot_time=BOOT,
    end=PLAIN_END,
)
# The next launch on the same device: same build, binary, OS and boot.
SAME = replace(RUN, end=None)


def with_end(**changes) -> RunFacts:
    return replace(RUN, end=replace(PLAIN_END, **changes))


def result(run: RunFacts, successor: RunFacts | None = SAME, grace: bool = False) -> tuple:
    got = classify_session(run, successor, grace)
    assert got.rules_version == RULES_VERSION == "foom-2026.11"
    return got.cls, got.rule


def test_the_table_has_fifteen_rules():
    assert sorted(RULES) == list(range(1, 16))


# --- one case per row ----------------------------------------------------------------------------


def test_rule_1_low_memory_in_foreground_is_foom():
    assert result(with_end(os_exit_reason="low_memory")) == ("foom", 1)


def test_rule_1_low_memory_in_background_is_background_oom():
    assert result(with_end(os_exit_reason="low_memory", state="background")) == (
        "background_oom",
        1,
    )
    # "else": inactive and suspended are not foreground either
    assert result(with_end(os_exit_reason="low_memory", state="inactive")) == ("background_oom", 1)


@pytest.mark.parametrize(
    ("reason", "cls"),
    [
        ("crash", "crash"),
        ("crash_native", "crash"),
        ("anr", "app_hang"),
        ("exit_self", "exit"),
        ("user_requested", "user_quit"),
        ("user_stopped", "user_quit"),
        ("package_updated", "app_upgrade"),
        ("signaled", "os_kill"),
        ("excessive_resource_usage", "os_kill"),
        ("unknown", "os_kill"),
        ("some_future_reason", "os_kill"),
    ],
)
def test_rule_2_other_os_exit_reasons_are_mapped(reason, cls):
    assert result(with_end(os_exit_reason=reason)) == (cls, 2)


def test_rule_3_crashed():
    assert result(with_end(crashed=True)) == ("crash", 3)


def test_rule_4_main_thread_blocked_in_foreground_is_app_hang():
    assert result(with_end(main_thread_blocked=True)) == ("app_hang", 4)


def test_rule_4_needs_the_foreground():
    # blocked while in background: not a watchdog kill of the UI; rule 12 decides
    assert result(with_end(main_thread_blocked=True, state="background")) == ("background_oom", 12)


def test_rule_5_user_quit():
    assert result(with_end(user_quit=True)) == ("user_quit", 5)


def test_rule_6_exit_called():
    assert result(with_end(exit_called=True)) == ("exit", 6)


def test_rule_7_next_run_has_another_build():
    assert result(RUN, replace(SAME, build_number="2742")) == ("app_upgrade", 7)
    assert result(RUN, replace(SAME, build_version="8.0.52")) == ("app_upgrade", 7)


def test_rule_7_next_run_has_another_binary():
    assert result(RUN, replace(SAME, binary_uuid="77AA")) == ("app_upgrade", 7)


def test_rule_8_next_run_has_another_os():
    assert result(RUN, replace(SAME, os="17.5")) == ("os_upgrade", 8)


def test_rule_9_next_run_has_another_boot_time():
    assert result(RUN, replace(SAME, boot_time=datetime(2026, 11, 21, tzinfo=UTC))) == (
        "reboot",
        9,
    )


@pytest.mark.parametrize("flag", ["debugger", "simulator", "extension"])
def test_rule_10_debugger_simulator_extension(flag):
    assert result(with_end(**{flag: True})) == ("excluded", 10)


def test_rule_10_bot_device():
    assert result(replace(RUN, bot=True)) == ("excluded", 10)


def test_rule_11_thermal_critical():
    assert result(with_end(thermal_critical=True)) == ("thermal_kill", 11)


@pytest.mark.parametrize("state", ["background", "suspended"])
def test_rule_12_background_or_suspended(state):
    assert result(with_end(state=state)) == ("background_oom", 12)


def test_rule_13_inactive():
    assert result(with_end(state="inactive")) == ("inactive_kill", 13)


def test_rule_14_foreground_for_less_than_a_second():
    assert result(with_end(active_for_ms=999)) == ("excluded", 14)
    # 1000 ms is enough: the rule is "< 1000"
    assert result(with_end(active_for_ms=1000)) == ("foom", 15)
    # not reported: not known to be under a second, the rule does not match
    assert result(with_end(active_for_ms=None)) == ("foom", 15)


def test_rule_15_otherwise_foom():
    assert result(RUN) == ("foom", 15)


# --- rule order where two rules apply ------------------------------------------------------------


def test_os_exit_reason_wins_over_the_flags():
    # rule 1 before rule 3: the OS said low memory, the app's own crash flag loses
    assert result(with_end(os_exit_reason="low_memory", crashed=True)) == ("foom", 1)
    # rule 2 before rule 5
    assert result(with_end(os_exit_reason="anr", user_quit=True)) == ("app_hang", 2)


def test_crash_wins_over_hang_quit_and_exit():
    # rules 3, 4, 5, 6 all match: 3 wins
    run = with_end(crashed=True, main_thread_blocked=True, user_quit=True, exit_called=True)
    assert result(run) == ("crash", 3)
    # without the crash, 4 wins over 5 and 6
    run = with_end(main_thread_blocked=True, user_quit=True, exit_called=True)
    assert result(run) == ("app_hang", 4)
    assert result(with_end(user_quit=True, exit_called=True)) == ("user_quit", 5)


def test_upgrade_wins_over_os_upgrade_and_reboot():
    # an App Store update installed with an OS update and a reboot: rule 7 first
    successor = replace(SAME, build_number="2742", os="17.5", boot_time=None)
    assert result(RUN, replace(successor, boot_time=datetime(2026, 11, 21, tzinfo=UTC))) == (
        "app_upgrade",
        7,
    )
    # OS updates reboot the device: rule 8 before rule 9
    successor = replace(SAME, os="17.5", boot_time=datetime(2026, 11, 21, tzinfo=UTC))
    assert result(RUN, successor) == ("os_upgrade", 8)


def test_exit_wins_over_upgrade():
    # rule 6 before rule 7: the app called exit() and was updated afterwards
    assert result(with_end(exit_called=True), replace(SAME, build_number="2742")) == ("exit", 6)


def test_reboot_wins_over_debugger():
    # rule 9 before rule 10
    run = with_end(debugger=True)
    assert result(run, replace(SAME, boot_time=datetime(2026, 11, 21, tzinfo=UTC))) == (
        "reboot",
        9,
    )


def test_excluded_wins_over_thermal_and_background():
    # rule 10 before 11 and 12
    assert result(with_end(simulator=True, thermal_critical=True, state="background")) == (
        "excluded",
        10,
    )


def test_thermal_wins_over_background():
    # rule 11 before 12
    assert result(with_end(thermal_critical=True, state="suspended")) == ("thermal_kill", 11)


def test_background_wins_over_short_activity():
    # rule 12 before 14: a background run is never "excluded for unreliable state"
    assert result(with_end(state="background", active_for_ms=10)) == ("background_oom", 12)


def test_a_fact_missing_on_one_side_proves_nothing():
    # the successor did not report its binary, OS or boot time: rules 7-9 cannot match
    successor = replace(SAME, binary_uuid="", os="", boot_time=None)
    assert result(RUN, successor) == ("foom", 15)


# --- no successor, grace period, end never arrived -----------------------------------------------


def test_no_successor_and_no_end_is_pending():
    run = replace(RUN, end=None)
    assert classify_session(run, None, grace_passed=False) == Classification("pending", None)
    # the grace period applies to runs whose end is known; without an end it stays pending
    assert classify_session(run, None, grace_passed=True) == Classification("pending", None)


def test_no_successor_with_an_end_waits_for_the_grace_period():
    assert result(RUN, None, grace=False) == ("pending", None)
    assert result(RUN, None, grace=True) == ("foom", 15)


def test_after_the_grace_period_the_successor_rules_cannot_match():
    assert result(with_end(state="background"), None, grace=True) == ("background_oom", 12)
    assert result(with_end(crashed=True), None, grace=True) == ("crash", 3)


def test_successor_known_but_end_never_arrived():
    run = replace(RUN, end=None)
    # the successor rules still apply
    assert result(run, replace(SAME, os="17.5")) == ("os_upgrade", 8)
    assert result(replace(run, bot=True)) == ("excluded", 10)
    # otherwise its state is unknown: excluded under rule 14, never a FOOM
    assert result(run) == ("excluded", 14)


def test_a_successor_classifies_before_the_grace_period():
    assert result(RUN, SAME, grace=False) == ("foom", 15)


# --- Wilson interval -----------------------------------------------------------------------------

# z = 1.959963984540054, z² = 3.8414588206941254


def test_wilson_five_of_ten():
    # p = 0.5, n = 10; z²/n = 0.38414588206941254; 1 + z²/n = 1.3841458820694126
    # centre = (0.5 + 0.19207294103470627) / 1.3841458820694126 = 0.5
    # half = z / 1.3841458820694126 · sqrt(0.5·0.5/10 + z²/400)
    #      = 1.4160097 · sqrt(0.025 + 0.0096036470517353) = 1.4160097 · 0.1860206 = 0.2634069
    # -> (0.2365931, 0.7634069)
    low, high = wilson_interval(5, 10)
    assert low == pytest.approx(0.2365931, abs=1e-7)
    assert high == pytest.approx(0.7634069, abs=1e-7)


def test_wilson_zero_of_ten():
    # p = 0: centre = (z²/20) / 1.3841458820694126 = 0.19207294 / 1.38414588 = 0.13876640
    # half = 1.4160097 · sqrt(0 + 0.0096036470517353) = 1.4160097 · 0.0979982 = 0.13876640
    # -> low exactly 0, high = 2 · 0.13876640 = 0.27753280 (= (z²/n) / (1 + z²/n))
    low, high = wilson_interval(0, 10)
    assert low == 0.0
    assert high == pytest.approx(0.2775328, abs=1e-7)


def test_wilson_one_of_a_hundred():
    # p = 0.01, n = 100; z²/n = 0.038414588; 1 + z²/n = 1.038414588
    # centre = (0.01 + 0.019207294) / 1.038414588 = 0.029207294 / 1.038414588 = 0.028126814
    # half = (1.959963985 / 1.038414588) · sqrt(0.01·0.99/100 + z²/40000)
    #      = 1.8874581 · sqrt(0.000099 + 0.0000960365) = 1.8874581 · 0.0139655 = 0.0263594
    # -> (0.0017674, 0.0544862)
    low, high = wilson_interval(1, 100)
    assert low == pytest.approx(0.0017674, abs=1e-7)
    assert high == pytest.approx(0.0544862, abs=1e-7)


def test_wilson_all_successes_reaches_one():
    # mirror of 0 of 10: (1 - 0.2775328, 1)
    low, high = wilson_interval(10, 10)
    assert low == pytest.approx(1 - 0.2775328, abs=1e-7)
    assert high == 1.0


def test_rate_with_interval():
    rate = rate_with_interval(1, 100)
    assert rate is not None
    assert (rate.successes, rate.trials, rate.rate) == (1, 100, 0.01)
    assert rate.low == pytest.approx(0.0017674, abs=1e-7)
    assert rate_with_interval(0, 0) is None


def test_wilson_refuses_impossible_counts():
    with pytest.raises(ValueError):
        wilson_interval(1, 0)
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def test_end_flags_are_the_yes_no_facts_of_an_end():
    # The parser, the Session columns and the upsert all go by END_FLAGS: it must name every
    # boolean of EndFacts, and nothing else.
    booleans = tuple(f.name for f in fields(EndFacts) if f.type == "bool")
    assert booleans == END_FLAGS
