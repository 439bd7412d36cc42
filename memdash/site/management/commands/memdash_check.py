"""python manage.py memdash_check --app <id or bundle id> --base <version[:number]>
--target <version[:number]> [--category NAME ...] [--max-growth 5%] [--alpha 0.05]: the CI gate.

Exit status 0 when nothing grew significantly past the limit, 1 with a report of what did
(memory, where the rank test finds the growth significant at --alpha, and allocator churn), 2
when the arguments name nothing.
"""

from __future__ import annotations

import sys
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memdash.churn import reads as churn_selectors
from memdash.compare import writes as services
from memdash.compare.logic.gate import gate_failures, unproven_growth
from memdash.compare.logic.stats import (
    DEFAULT_ALPHA,
    DEFAULT_MAX_GROWTH,
    parse_alpha,
    parse_growth_limit,
)
from memdash.compare.reads import builds as build_compare
from memdash.compare.reads import refs
from memdash.compare.reads.refs import RefError
from memdash.core.logic.units import format_bytes
from memdash.core.models import Build
from memdash.core.reads.apps import resolve_app
from memdash.foom.logic.exits import parse_os_rate_limit
from memdash.foom.reads.exits import os_rate_check

USAGE_ERROR = 2


def _signed_bytes(value: float) -> str:
    return ("+" if value > 0 else "") + format_bytes(value)


def _percent(base: float, delta: float) -> str:
    return f"{delta * 100 / base:+.1f}%" if base else "new"


def _p(value: float | None) -> str:
    if value is None:
        return "p n/a"
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


class Command(BaseCommand):
    help = "Fail (exit 1) when memory grew past a limit from one build to another."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--app", required=True, help="app id or bundle id")
        parser.add_argument("--platform", default="", help="when the bundle id names several apps")
        parser.add_argument("--base", required=True, help="base build: <version>[:<number>]")
        parser.add_argument("--target", required=True, help="target build: <version>[:<number>]")
        parser.add_argument(
            "--category", action="append", default=[], help="check only these (repeatable)"
        )
        parser.add_argument(
            "--max-growth", default=DEFAULT_MAX_GROWTH, help="'5%%' (default) or bytes ('1MiB')"
        )
        parser.add_argument(
            "--min-delta", default="0", help="ignore growth below these bytes (noise floor)"
        )
        parser.add_argument(
            "--alpha",
            default=str(DEFAULT_ALPHA),
            help="significance level of the rank test (default 0.05): only growth with a "
            "smaller p-value fails",
        )
        parser.add_argument("--trigger", default="")
        parser.add_argument("--model", default="", help="device model")
        parser.add_argument("--os", default="")
        parser.add_argument(
            "--churn-threshold",
            type=float,
            default=None,
            help="churn growth limit in percent (default: the app's setting)",
        )
        parser.add_argument(
            "--max-os-foom-rate",
            default=None,
            help="also fail on the OS-reported foreground memory-kill rate (MetricKit, "
            "ApplicationExitInfo): 'band' when the target's is above the base's beyond both "
            "95%% Wilson intervals, or a ceiling like '0.5%%'",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        app = resolve_app(options["app"], options["platform"] or None)
        if app is None:
            raise CommandError(f"no single app {options['app']!r}", returncode=USAGE_ERROR)
        try:
            base = refs.find_build_spec(app, options["base"])
            target = refs.find_build_spec(app, options["target"])
            limit = parse_growth_limit(options["max_growth"])
            floor = parse_growth_limit(options["min_delta"])
            alpha = parse_alpha(options["alpha"])
        except (RefError, ValueError) as error:
            raise CommandError(str(error), returncode=USAGE_ERROR) from None
        os_limit = options["max_os_foom_rate"]
        if os_limit is not None:
            try:
                parse_os_rate_limit(os_limit)
            except ValueError as error:
                raise CommandError(f"--max-os-foom-rate {error}", returncode=USAGE_ERROR) from None
        if floor.bytes is None:
            raise CommandError("--min-delta is bytes, like 4096 or 64KiB", returncode=USAGE_ERROR)
        filters = refs.SnapshotFilter(options["trigger"], options["model"], options["os"])
        summaries = services.build_summaries(base, target, filters)
        comparison = build_compare.compare_builds(
            base, target, filters, options["category"], summaries, alpha
        )
        failures = gate_failures(comparison, limit, floor.bytes)
        unproven = unproven_growth(comparison, limit, floor.bytes)

        out = self.stdout.write
        out(f"memdash check: {app.bundle_id} ({app.platform}) {base} -> {target}")
        out(
            f"max growth: {limit} of the median, where significant (rank test p < {alpha:g}); "
            f"growth under {floor.bytes} bytes ignored"
        )
        out(
            f"snapshots: {len(comparison.base_snapshots)} base, "
            f"{len(comparison.target_snapshots)} target; median persistent bytes per snapshot"
        )
        if not comparison.base_snapshots or not comparison.target_snapshots:
            out("warning: a build has no snapshots matching the filters; nothing to compare")
        total = comparison.total.bytes
        out(
            f"whole heap: {format_bytes(total.base.median or 0)} -> "
            f"{format_bytes(total.target.median or 0)} "
            f"({_signed_bytes(total.delta_median or 0)}, {_p(total.p_value)})"
        )
        for failure in failures:
            out(
                f"FAIL {failure.category}: {format_bytes(failure.base_bytes)} -> "
                f"{format_bytes(failure.target_bytes)} ({_signed_bytes(failure.delta_bytes)}, "
                f"{_percent(failure.base_bytes, failure.delta_bytes)}; allowed "
                f"{format_bytes(failure.allowed_bytes)}; {_p(failure.p_value)})"
            )
        for growth in unproven:
            out(
                f"not significant {growth.category}: {format_bytes(growth.base_bytes)} -> "
                f"{format_bytes(growth.target_bytes)} ({_signed_bytes(growth.delta_bytes)}, "
                f"{_percent(growth.base_bytes, growth.delta_bytes)}; {_p(growth.p_value)}, "
                f"not below {alpha:g}: not failed on)"
            )

        threshold = options["churn_threshold"]
        if threshold is None:
            threshold = churn_selectors.app_threshold_percent(app)
        churn = churn_selectors.churn_regressions(app, base, target, threshold)
        for change in churn:
            grew = (
                f"{change.change_percent:+.1f}%"
                if change.change_percent is not None
                else "from nothing"
            )
            out(f"FAIL churn of {change.scenario}: {grew} (limit {threshold:g}%)")
        if not churn:
            out(f"churn: no scenario grew past {threshold:g}%")

        problems = len(failures) + len(churn)
        if os_limit is not None:
            problems += self.check_os_rate(base, target, os_limit)
        if problems:
            out(f"result: FAIL ({problems} over the limit)")
            sys.exit(1)
        out("result: PASS")

    def check_os_rate(self, base: Build, target: Build, limit: str) -> int:
        """The OS-reported foreground memory-kill rate of the two builds; 1 when it fails."""
        out = self.stdout.write
        check = os_rate_check(base, target, limit)
        shown = {
            side: f"{r.rate:.2%} (95%: {r.low:.2%} – {r.high:.2%}; {r.successes} of {r.trials})"
            if r
            else "no foreground exits reported"
            for side, r in (("base", check.base), ("target", check.target))
        }
        out(f"OS-reported memory kills per foreground exit: {shown['base']} -> {shown['target']}")
        if not check.judged:
            out("warning: not enough OS-reported exits to judge the OS-reported rate")
        if check.failure:
            out(f"FAIL OS-reported foreground memory-kill rate: {check.failure}")
            return 1
        return 0
