"""GET /api/v1/apps/<id>/churn: every scenario's churn per build, as the page shows it."""

from __future__ import annotations

import math
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from memdash.churn import reads as selectors
from memdash.churn.logic.cost import ScenarioChange, Spread
from memdash.core.web.api import build_ref
from memdash.core.web.http import app_or_404
from memdash.core.web.schema import BOOL, BUILD_REF, INT, NUMBER, STR, array, nullable, obj


def finite(value: float | None) -> float | None:
    """JSON has no infinity: an infinite ratio (churn did not vary at all) is null."""
    return None if value is None or math.isinf(value) else value


def spread_json(spread: Spread) -> dict[str, Any]:
    return {
        "runs": spread.runs,
        "median": spread.median,
        "low": spread.low,
        "high": spread.high,
        "cv": spread.cv,
    }


def change_json(change: ScenarioChange) -> dict[str, Any]:
    return {
        "scenario": change.scenario,
        "previous": change.previous,
        "current": change.current,
        "change_percent": change.change_percent,
        "regressed": change.regressed,
    }


SPREAD = obj({"runs": INT, "median": NUMBER, "low": NUMBER, "high": NUMBER, "cv": nullable(NUMBER)})
CHANGE_FIELDS = {
    "previous": nullable(NUMBER),
    "current": NUMBER,
    "change_percent": nullable(NUMBER),
    "regressed": BOOL,
}
APP_CHURN = obj(
    {
        "app": obj({"id": INT, "bundle_id": STR, "platform": STR}),
        "weights": {"type": "object", "additionalProperties": NUMBER},
        "threshold_percent": NUMBER,
        "scenarios": array(
            obj(
                {
                    "name": STR,
                    "median_churn_cv": nullable(NUMBER),
                    "median_elapsed_cv": nullable(NUMBER),
                    "steadiness": nullable(NUMBER),
                    "builds": array(
                        obj(
                            {
                                "build": BUILD_REF,
                                "previous_build": nullable(BUILD_REF),
                                "churn": SPREAD,
                                "elapsed_ms": SPREAD,
                                "steadiness": nullable(NUMBER),
                                **CHANGE_FIELDS,
                            }
                        )
                    ),
                }
            )
        ),
        "flagged_builds": array(
            obj(
                {
                    "build": BUILD_REF,
                    "regressions": array(obj({"scenario": STR, **CHANGE_FIELDS})),
                }
            )
        ),
    }
)


@extend_schema(
    summary="Allocator churn of an app: per scenario and build, churn and elapsed time over "
    "runs, change against the previous build, flagged builds",
    responses={200: APP_CHURN},
)
@api_view(["GET"])
def api_app_churn(request: Request, app_id: int) -> Response:
    app = app_or_404(request.user, app_id)
    series = selectors.scenario_series(app)
    return Response(
        {
            "app": {"id": app.pk, "bundle_id": app.bundle_id, "platform": app.platform},
            "weights": selectors.valid_weights(app),
            "threshold_percent": selectors.app_threshold_percent(app),
            "scenarios": [
                {
                    "name": s.scenario.name,
                    "median_churn_cv": s.median_churn_cv,
                    "median_elapsed_cv": s.median_elapsed_cv,
                    "steadiness": finite(s.steadiness),
                    "builds": [
                        {
                            "build": build_ref(m.build),
                            "previous_build": build_ref(m.previous_build),
                            "churn": spread_json(m.churn),
                            "elapsed_ms": spread_json(m.elapsed),
                            "steadiness": finite(m.steadiness),
                            **{k: v for k, v in change_json(m.change).items() if k != "scenario"},
                        }
                        for m in s.builds
                    ],
                }
                for s in series
            ],
            "flagged_builds": [
                {"build": build_ref(build), "regressions": [change_json(c) for c in changes]}
                for build, changes in selectors.flagged_builds(series)
            ],
        }
    )
