"""Reads of the FOOM domain. Rates come from the pre-aggregated counts (one row per build, one per
build and day), never from counting sessions, so a trend over 100 builds reads about 100 rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, cast

from django.db.models import Count, F, QuerySet, Sum

from memdash.allocations.models import CategoryTotal, Snapshot
from memdash.core.logic.numbers import whole_number
from memdash.core.models import App, Build
from memdash.core.reads.apps import app_for_user, apps_for_user, builds_in_release_order
from memdash.foom.logic.classify import CLASSES, FOOM, Rate, rate_with_interval
from memdash.foom.models import BuildDayFoomStats, BuildFoomStats, Session

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

SUMMABLE = ("sessions", "classified", "rate_sessions", "foom")  # devices do not add up
COUNT_FIELDS = (
    "sessions",
    "classified",
    "rate_sessions",
    "foom",
    "devices",
    "classified_devices",
    "foom_devices",
)


@dataclass(frozen=True)
class FoomCountsView:
    """Counts of a build (or a day) and the two rates with their 95% Wilson intervals."""

    sessions: int = 0
    classified: int = 0
    rate_sessions: int = 0
    foom: int = 0
    devices: int = 0
    classified_devices: int = 0
    foom_devices: int = 0
    classes: dict[str, int] | None = None

    @property
    def session_rate(self) -> Rate | None:
        return rate_with_interval(self.foom, self.rate_sessions)

    @property
    def user_rate(self) -> Rate | None:
        return rate_with_interval(self.foom_devices, self.classified_devices)

    @property
    def class_counts(self) -> dict[str, int]:
        return self.classes or {}


def _counts_of(stats: BuildFoomStats | BuildDayFoomStats | None) -> FoomCountsView:
    if stats is None:
        return FoomCountsView(classes={})
    return FoomCountsView(
        **{name: getattr(stats, name) for name in COUNT_FIELDS}, classes=dict(stats.classes)
    )


@dataclass(frozen=True)
class BuildFoom:
    build: Build
    counts: FoomCountsView


def build_trend(app: App) -> list[BuildFoom]:
    """Every build of the app in release order with its counts (zeros for a build without runs)."""
    stats = {s.build_id: s for s in BuildFoomStats.objects.filter(app=app)}
    return [BuildFoom(b, _counts_of(stats.get(b.pk))) for b in builds_in_release_order(app)]


def builds_with_sessions(trend: list[BuildFoom]) -> list[BuildFoom]:
    return [row for row in trend if row.counts.sessions]


def build_counts(build: Build) -> FoomCountsView:
    return _counts_of(BuildFoomStats.objects.filter(build=build).first())


@dataclass(frozen=True)
class DayFoom:
    day: date
    counts: FoomCountsView


def day_trend(app: App, build: Build | None = None) -> list[DayFoom]:
    """FOOM counts per day (the UTC day a run started), over all builds or one build.

    Over all builds the session counts add up; devices do not (a device that updates during a
    day has runs in two builds), so the day trend has no per-user rate over all builds.
    """
    rows = BuildDayFoomStats.objects.filter(app=app)
    if build is not None:
        rows = rows.filter(build=build)
        return [DayFoom(r.day, _counts_of(r)) for r in rows.order_by("day")]
    # The plugin cannot see the names of annotate(**{...}): the rows hold `day` and SUMMABLE.
    summed = cast(
        "QuerySet[BuildDayFoomStats, dict[str, Any]]",
        rows.values("day").annotate(**{name: Sum(name) for name in SUMMABLE}).order_by("day"),
    )
    return [
        DayFoom(
            r["day"],
            FoomCountsView(
                sessions=r["sessions"],
                classified=r["classified"],
                rate_sessions=r["rate_sessions"],
                foom=r["foom"],
            ),
        )
        for r in summed
    ]


def foom_sessions(build: Build) -> QuerySet[Session]:
    return (
        Session.objects.filter(build=build, classification=FOOM)
        .select_related("device")
        .order_by("-started_at", "-id")
    )


def snapshots_by_session(app: App, session_ids: list[str]) -> dict[str, list[Snapshot]]:
    """The snapshots uploaded for these runs (a snapshot's `session` is the run's id)."""
    found: dict[str, list[Snapshot]] = {}
    if not session_ids:
        return found
    snapshots = Snapshot.objects.filter(app=app, session_id__in=session_ids).order_by(
        "captured_at", "id"
    )
    for snapshot in snapshots.only(
        "id", "session_id", "captured_at", "trigger", "persistent_bytes"
    ):
        found.setdefault(snapshot.session_id, []).append(snapshot)
    return found


MAX_FOOTPRINT_POINTS = 20_000


def foom_footprints_by_model(build: Build) -> dict[str, list[int]]:
    """Last footprint of the build's FOOM runs per device model (the newest runs first, capped):
    where each model's memory limit shows."""
    rows = (
        foom_sessions(build)
        .filter(footprint_bytes__isnull=False)
        .values_list("device__model", "footprint_bytes")[:MAX_FOOTPRINT_POINTS]
    )
    by_model: dict[str, list[int]] = {}
    for model, footprint in rows:
        # footprint_bytes__isnull=False above: never None here.
        by_model.setdefault(model or "unknown model", []).append(cast(int, footprint))
    return dict(sorted(by_model.items()))


@dataclass(frozen=True)
class DominantCategory:
    name: str
    persistent_bytes: int
    persistent: int
    snapshots: int
    share: float  # of the persistent bytes of all those snapshots
    largest_snapshot_id: int | None = None  # the snapshot holding most of it: its tree links here


def foom_snapshot_categories(build: Build, limit: int = 10) -> tuple[int, list[DominantCategory]]:
    """The categories that hold the most persistent bytes in the snapshots of the build's FOOM
    runs: (number of such snapshots, the top categories)."""
    foom_ids = Session.objects.filter(build=build, classification=FOOM).values("session_id")
    snapshots = Snapshot.objects.filter(app_id=build.app_id, session_id__in=foom_ids)
    snapshot_ids = list(snapshots.values_list("pk", flat=True)[:5000])
    if not snapshot_ids:
        return 0, []
    totals = CategoryTotal.objects.filter(snapshot_id__in=snapshot_ids)
    everything = totals.aggregate(total=Sum("persistent_bytes"))["total"] or 0
    rows = list(
        totals.values(name=F("category__name"))
        .annotate(
            persistent_bytes_sum=Sum("persistent_bytes"),
            persistent_sum=Sum("persistent"),
            snapshot_count=Count("snapshot_id", distinct=True),
        )
        .order_by("-persistent_bytes_sum", "name")[:limit]
    )
    largest: dict[str, int] = {}
    for name, snapshot_id in (
        totals.filter(category__name__in=[r["name"] for r in rows])
        .order_by("-persistent_bytes", "snapshot_id")
        .values_list("category__name", "snapshot_id")
    ):
        largest.setdefault(name, snapshot_id)
    return len(snapshot_ids), [
        DominantCategory(
            name=r["name"],
            persistent_bytes=r["persistent_bytes_sum"] or 0,
            persistent=r["persistent_sum"] or 0,
            snapshots=r["snapshot_count"],
            share=(r["persistent_bytes_sum"] or 0) / everything if everything else 0.0,
            largest_snapshot_id=largest.get(r["name"]),
        )
        for r in rows
    ]


def session_for_user(user: User | AnonymousUser, app_id: int, pk: int) -> Session:
    """The run, if the user may see its app; else App.DoesNotExist or Session.DoesNotExist
    (views answer 404)."""
    app = app_for_user(user, app_id)
    try:
        return Session.objects.select_related("build", "device").get(app=app, pk=pk)
    except Session.DoesNotExist:
        raise Session.DoesNotExist("No Session matches the given query.") from None


def session_by_uploaded_id(app: App, session_id: str) -> Session | None:
    """The app's run with this uploaded id (what a snapshot's `session` names), or None."""
    return Session.objects.filter(app=app, session_id=session_id).first()


def sessions_for_user(
    user: User | AnonymousUser, ref: str, app_id: int | None = None
) -> list[Session]:
    """The runs with this uploaded id (or, failing that, this number in memdash) among the apps
    the user can see: none, one, or (an id two apps share) two."""
    visible = Session.objects.filter(app__in=apps_for_user(user)).select_related(
        "app", "build", "device"
    )
    if app_id is not None:
        visible = visible.filter(app_id=app_id)
    matches = list(visible.filter(session_id=ref)[:2])
    if not matches and (number := whole_number(ref)) is not None:
        matches = list(visible.filter(pk=number))
    return matches


def ordered_classes(classes: dict[str, int]) -> list[tuple[str, int]]:
    return [(c, classes[c]) for c in CLASSES if classes.get(c)]
