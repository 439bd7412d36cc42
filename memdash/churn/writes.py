"""Writes of allocator churn: a validated `memdash.churn` document into runs, in bulk."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memdash.churn.logic.document import ChurnDocument
from memdash.churn.models import (
    DEFAULT_CHURN_WEIGHTS,
    ChurnRun,
    ChurnSettings,
    Scenario,
    ScenarioFunction,
    ScenarioRun,
)
from memdash.core.models import App, Build, Device


@dataclass(frozen=True)
class ChurnStored:
    runs: int
    scenario_runs: int
    replaced_runs: int
    new_scenarios: int

    def counts(self) -> dict[str, int]:
        return {
            "runs": self.runs,
            "scenario_runs": self.scenario_runs,
            "replaced_runs": self.replaced_runs,
            "new_scenarios": self.new_scenarios,
        }


def scenarios_by_name(app: App, names: set[str]) -> tuple[dict[str, Scenario], int]:
    """The app's scenarios with these names, creating the missing ones (race-safe: a
    concurrent upload creating the same name is ignored and its row read back)."""
    existing = {s.name: s for s in Scenario.objects.filter(app=app, name__in=names)}
    missing = names - existing.keys()
    if missing:
        Scenario.objects.bulk_create(
            [Scenario(app=app, name=name) for name in sorted(missing)], ignore_conflicts=True
        )
        existing = {s.name: s for s in Scenario.objects.filter(app=app, name__in=names)}
    return existing, len(missing)


def store_churn(
    app: App,
    build: Build,
    device: Device | None,
    document: ChurnDocument,
    *,
    received_at: datetime,
    upload_id: int | None = None,
) -> ChurnStored:
    """Store every run of a validated document. A run id already stored for the same build and
    device is replaced (a re-sent run is the same run, never counted twice)."""
    run_ids = [run.id for run in document.runs]
    earlier = ChurnRun.objects.filter(app=app, build=build, device=device, run_id__in=run_ids)
    replaced_runs = earlier.count()
    earlier.delete()
    names = {s.name for run in document.runs for s in run.scenarios}
    scenarios, new_scenarios = scenarios_by_name(app, names)
    captured_at = document.captured_at or received_at
    runs = ChurnRun.objects.bulk_create(
        [
            ChurnRun(
                app=app,
                build=build,
                device=device,
                run_id=run.id,
                captured_at=captured_at,
                received_at=received_at,
                upload_id=upload_id,
            )
            for run in document.runs
        ]
    )
    scenario_rows = [
        ScenarioRun(
            run=stored,
            app=app,
            scenario=scenarios[measured.name],
            build=build,
            thread=measured.thread,
            start_marker=measured.start_marker,
            end_marker=measured.end_marker,
            elapsed_ms=measured.elapsed_ms,
            calls=measured.calls,
            sent_calls=measured.sent_calls,
        )
        for stored, run in zip(runs, document.runs, strict=True)
        for measured in run.scenarios
    ]
    ScenarioRun.objects.bulk_create(scenario_rows)
    measured_in_order = [measured for run in document.runs for measured in run.scenarios]
    ScenarioFunction.objects.bulk_create(
        [
            ScenarioFunction(
                scenario_run=row,
                app=app,
                function=function,
                count=sums.count,
                bytes=sums.bytes,
                log2_bytes=sums.log2_bytes,
            )
            for row, measured in zip(scenario_rows, measured_in_order, strict=True)
            for function, sums in sorted(measured.functions.items())
        ],
        batch_size=5_000,
    )
    return ChurnStored(
        runs=len(runs),
        scenario_runs=len(scenario_rows),
        replaced_runs=replaced_runs,
        new_scenarios=new_scenarios,
    )


def set_churn_settings(app: App, values: dict[str, float]) -> None:
    weights = {fn: values[fn] for fn in DEFAULT_CHURN_WEIGHTS if fn in values}
    ChurnSettings.objects.update_or_create(
        app=app, defaults={"weights": weights, "threshold_percent": values["threshold_percent"]}
    )
