"""python manage.py memdash_check --app <id or bundle id> --base <version[:number]>
--target <version[:number]> [--category NAME ...] [--max-growth 5%]: the CI gate.

Exit status 0 when nothing grew past the limit, 1 with a report of what did (memory, and
allocator churn when the churn domain is installed), 2 when the arguments name nothing.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from memdash.compare import selectors
from memdash.compare.selectors import RefError
from memdash.compare.stats import DEFAULT_MAX_GROWTH, parse_growth_limit
from memdash.core.models import App, Build
from memdash.core.selectors import resolve_app
from memdash.core.units import format_bytes

USAGE_ERROR = 2


def _signed_bytes(value: float) -> str:
    return ("+" if value > 0 else "") + format_bytes(value)


def _percent(base: float, delta: float) -> str:
    return f"{delta * 100 / base:+.1f}%" if base else "new"


def _p(value: float | None) -> str:
    if value is None:
        return "p n/a"
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


def churn_regressions(app: App, base: Build, target: Build, threshold: float) -> list | None:
    """The churn domain's regressions between the builds, or None when it is not installed
    (it is written separately; the gate works without it)."""
    try:
        from memdash.churn.selectors import churn_regressions as find
    except ImportError:
        return None
    return list(find(app, base, target, threshold))


class Command(BaseCommand):
    help = "Fail (exit 1) when memory grew past a limit from one build to another."

    def add_arguments(self, parser):
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
        parser.add_argument("--trigger", default="")
        parser.add_argument("--model", default="", help="device model")
        parser.add_argument("--os", default="")
        parser.add_argument(
            "--churn-threshold",
            type=float,
            default=None,
            help="churn growth limit in percent (default: the app's setting)",
        )

    def handle(self, *args, **options):
        app = resolve_app(options["app"], options["platform"] or None)
        if app is None:
            raise CommandError(f"no single app {options['app']!r}", returncode=USAGE_ERROR)
        try:
            base = selectors.find_build_spec(app, options["base"])
            target = selectors.find_build_spec(app, options["target"])
            limit = parse_growth_limit(options["max_growth"])
            floor = parse_growth_limit(options["min_delta"])
        except (RefError, ValueError) as error:
            raise CommandError(str(error), returncode=USAGE_ERROR) from None
        if floor.bytes is None:
            raise CommandError("--min-delta is bytes, like 4096 or 64KiB", returncode=USAGE_ERROR)
        filters = selectors.SnapshotFilter(options["trigger"], options["model"], options["os"])
        comparison = selectors.compare_builds(base, target, filters, options["category"])
        failures = selectors.gate_failures(comparison, limit, floor.bytes)

        out = self.stdout.write
        out(f"memdash check: {app.bundle_id} ({app.platform}) {base} -> {target}")
        out(f"max growth: {limit} of the median; growth under {floor.bytes} bytes ignored")
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

        threshold = options["churn_threshold"]
        if threshold is None:
            threshold = app.churn_threshold_percent
        churn = churn_regressions(app, base, target, threshold)
        if churn is None:
            out("churn: not checked (the churn domain is not installed)")
        else:
            for change in churn:
                percent = getattr(change, "change_percent", None)
                grew = f"{percent:+.1f}%" if percent is not None else "from nothing"
                name = getattr(change, "scenario", change)
                out(f"FAIL churn of {name}: {grew} (limit {threshold:g}%)")
            if not churn:
                out(f"churn: no scenario grew past {threshold:g}%")

        problems = len(failures) + len(churn or [])
        if problems:
            out(f"result: FAIL ({problems} over the limit)")
            sys.exit(1)
        out("result: PASS")
