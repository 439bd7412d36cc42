"""The FOOM lens's word in the CI gate over HTTP (`GET /api/v1/apps/<id>/compare`,
`core.web.gates`): the OS-reported foreground memory-kill rate. Apart from the exits views, so
that registering it (site's `ready`) loads no DRF or drf-spectacular into a process that serves
no page (`manage.py import_snapshot`, a task worker)."""

from __future__ import annotations

from memdash.core.models import Build
from memdash.core.web.gates import GateVerdict
from memdash.foom.logic.classify import Rate
from memdash.foom.reads import exits as exit_selectors

GATE_PARAMETER = "max_os_foom_rate"


def os_rate_gate(base: Build, target: Build, limit: str) -> GateVerdict:
    """`max_os_foom_rate` of `GET /api/v1/apps/<id>/compare`: as `memdash_check
    --max-os-foom-rate`, the target's OS-reported foreground memory-kill rate against the
    base's 95% band (`band`) or a ceiling (`0.5%`). ValueError for another limit."""
    check = exit_selectors.os_rate_check(base, target, limit)
    return GateVerdict(
        failures=[check.failure] if check.failure else [],
        answer={
            GATE_PARAMETER: limit,
            "os_foom_rate": {
                "base": _gate_rate(check.base),
                "target": _gate_rate(check.target),
                "judged": check.judged,
                "failure": check.failure or None,
            },
        },
    )


def _gate_rate(rate: Rate | None) -> dict[str, float | int] | None:
    if rate is None:
        return None
    return {
        "rate": rate.rate, "low": rate.low, "high": rate.high,
        "memory_kills": rate.successes, "foreground_exits": rate.trials,
    }  # fmt: skip
