"""Whether a rate alarms: above a ceiling, or above the previous build's beyond both 95% bands."""

from __future__ import annotations

from typing import Protocol


class RateLike(Protocol):
    @property
    def rate(self) -> float: ...
    @property
    def low(self) -> float: ...
    @property
    def high(self) -> float: ...


def percent(value: float) -> str:
    return f"{value:.2%}"


def rate_alarm(
    base: RateLike | None, target: RateLike, ceiling: float | None, significant: bool
) -> str:
    """Why the target's rate alarms, or ''. `ceiling` is a fraction (0.005 for 0.5%); with
    `significant`, a rise counts only when the target's lower bound is above the base's upper
    bound, so a rise within the noise of two samples never alarms."""
    if ceiling is not None and target.rate > ceiling:
        return f"{percent(target.rate)} is above the limit of {percent(ceiling)}"
    if significant and base is not None and target.low > base.high:
        return (
            f"{percent(target.rate)} (95%: {percent(target.low)} – {percent(target.high)}) is "
            f"above the previous build's {percent(base.rate)} (95%: {percent(base.low)} – "
            f"{percent(base.high)}) beyond both intervals"
        )
    return ""
