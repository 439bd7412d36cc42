"""The sides of a diff, read from refs (selectors: reads only; no URLs, no 404s).

A side of a diff is named by a ref:

- `snapshot:<id>`: the whole snapshot;
- `generation:<snapshot id>:<index>`: the allocations created in that generation; the index
  `baseline` (or nothing: `generation:<id>:`) is what was created before the first mark;
- `build:<version>:<number>` (`build:<version>` when the version is unambiguous), of the app the
  request names, else of the other side's, else of the one app of the user's that has it: the
  build's per-snapshot mean, i.e. its summed totals divided by its number of snapshots, so
  builds with different numbers of snapshots compare fairly.

A malformed ref raises RefError (the API answers 400); a ref naming what does not exist or what
the user may not see raises NotFound (the views answer 404).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import ObjectDoesNotExist
from django.db.models import QuerySet

from memdash.allocations.logic.analysis import BASELINE, generation_index, generation_name
from memdash.allocations.logic.calltree.tree import unpack_frames
from memdash.allocations.models import Generation, Snapshot
from memdash.allocations.reads.calltree.stored import stack_id_of
from memdash.allocations.reads.snapshots import snapshots_for_user
from memdash.core.logic.numbers import whole_number
from memdash.core.models import App, Build
from memdash.core.reads.apps import apps_for_user, find_build

AnyUser = User | AnonymousUser  # request.user: signed in or not
GenerationIndex = int | str  # a mark's index, or BASELINE


class RefError(ValueError):
    """A ref that cannot be read (the message says why); the API answers 400."""


class NotFound(ObjectDoesNotExist):
    """What a ref or an id names does not exist, or is not the user's to see; views answer 404
    (`core.web.http.found`; never 403, so that others' ids are not confirmed to exist)."""


@dataclass
class SnapshotFilter:
    trigger: str = ""
    model: str = ""
    os: str = ""

    def apply(self, snapshots: QuerySet[Snapshot]) -> QuerySet[Snapshot]:
        if self.trigger:
            snapshots = snapshots.filter(trigger=self.trigger)
        if self.model:
            snapshots = snapshots.filter(device_model=self.model)
        if self.os:
            snapshots = snapshots.filter(os=self.os)
        return snapshots

    def as_json(self) -> dict[str, str]:
        return {"trigger": self.trigger, "model": self.model, "os": self.os}

    def __bool__(self) -> bool:
        return bool(self.trigger or self.model or self.os)


@dataclass(frozen=True)
class Side:
    """One side of a diff, resolved and checked against the user's access."""

    kind: str  # snapshot | generation | build
    ref: str
    app: App
    label: str
    snapshot: Snapshot | None = None
    generation: GenerationIndex | None = None  # generation refs only
    build: Build | None = None
    snapshot_ids: tuple[int, ...] = field(default_factory=tuple)
    filters: SnapshotFilter = field(default_factory=SnapshotFilter)  # build sides only

    @property
    def divisor(self) -> int:
        """Totals of a build side are divided by its number of snapshots (per-snapshot mean)."""
        return max(len(self.snapshot_ids), 1) if self.kind == "build" else 1

    @property
    def generation_query(self) -> str:
        """The `generation=` value that selects a generation side's generation on pages."""
        return "baseline" if self.generation == BASELINE else str(self.generation)

    def as_json(self, url: str) -> dict[str, Any]:
        """The side in API answers, with the URL of the page that shows it."""
        data: dict[str, Any] = {"ref": self.ref, "kind": self.kind, "label": self.label, "url": url}
        if self.kind == "build":
            data["snapshots"] = len(self.snapshot_ids)
            data["filters"] = self.filters.as_json()
        return data


def parse_build_spec(text: str) -> tuple[str, str | None]:
    """'8.0.4:104' -> ('8.0.4', '104'); '8.0.4' -> ('8.0.4', None): any number, if only one."""
    version, sep, number = text.partition(":")
    if not version:
        raise RefError(f"{text!r}: a build is <version>:<number> or <version>")
    return version, (number if sep else None)


def parse_generation_index(text: str) -> GenerationIndex:
    """A generation of a ref or a picker; nothing is the baseline."""
    generation = BASELINE if text == "" else generation_index(text)
    if generation is None:
        raise RefError(f"generation index {text!r} is neither a number nor `baseline`")
    return generation


def parse_node(text: str | None) -> str | None:
    """A call-tree node id from a previous answer (a stack node id, a frame path `p…` of an
    inverted tree or one without system libraries, `n` for no stack); None for the roots."""
    if text in (None, ""):
        return None
    assert text is not None
    if text == "n" or unpack_frames(text) is not None:
        return text
    if stack_id_of(text) is not None:
        return text
    raise RefError(f"node {text!r} is not a call-tree node id")


def kept_snapshots(build: Build, filters: SnapshotFilter) -> QuerySet[Snapshot]:
    """The build's snapshots that the filters keep, in ascending id order."""
    return filters.apply(Snapshot.objects.filter(app_id=build.app_id, build=build)).order_by("pk")


def snapshot_ids(build: Build, filters: SnapshotFilter) -> list[int]:
    """The ids of the build's snapshots that the filters keep, in ascending order."""
    return list(kept_snapshots(build, filters).values_list("pk", flat=True))


def build_side(build: Build, filters: SnapshotFilter | None = None) -> Side:
    """A build's side: its snapshots (those the filters keep), averaged per snapshot."""
    filters = filters or SnapshotFilter()
    number = f":{build.number}" if build.number else ":"
    return Side(
        kind="build",
        ref=f"build:{build.version}{number}",
        app=build.app,
        label=f"build {build}",
        build=build,
        snapshot_ids=tuple(snapshot_ids(build, filters)),
        filters=filters,
    )


def _generation_label(snapshot: Snapshot, generation: GenerationIndex) -> str:
    """The generation's name as Instruments gives it (`allocations.generation_name`)."""
    if generation == BASELINE:
        return generation_name(None)
    found = Generation.objects.filter(snapshot=snapshot, index=generation).order_by("index").first()
    if found is None:
        count = Generation.objects.filter(snapshot=snapshot).count()
        raise NotFound(
            f"snapshot {snapshot.pk} has no generation {generation} ({count} generations)"
        )
    return generation_name(found.index, found.name)


def _snapshot_for(user: AnyUser, snapshot_id: int) -> Snapshot:
    snapshot = (
        snapshots_for_user(user)
        .select_related("app", "build", "device")
        .filter(pk=snapshot_id)
        .first()
    )
    if snapshot is None:
        raise NotFound("No such snapshot")
    return snapshot


def resolve_ref(
    user: AnyUser, text: str, app: App | None = None, filters: SnapshotFilter | None = None
) -> Side:
    """The side a ref names. NotFound for what the user may not see or what does not exist (a
    snapshot of another app than `app`, a generation it lacks, a build no app or several of the
    user's have when `app` is not given), RefError for a ref that is malformed. `filters`
    choose the snapshots of a build side."""
    kind, _, rest = (text or "").partition(":")
    if kind in ("snapshot", "generation"):
        id_text, _, index_text = rest.partition(":")
        snapshot_id = whole_number(id_text)
        if snapshot_id is None:
            raise RefError(f"{text!r}: expected {kind}:<snapshot id>")
        snapshot = _snapshot_for(user, snapshot_id)
        if app is not None and snapshot.app_id != app.pk:  # not there, as any id not found
            raise NotFound(f"snapshot {snapshot.pk} is not one of this app's")
        if kind == "snapshot":
            if index_text:
                raise RefError(f"{text!r}: expected snapshot:<id>")
            return Side(
                kind="snapshot",
                ref=f"snapshot:{snapshot.pk}",
                app=snapshot.app,
                label=f"snapshot #{snapshot.pk} ({snapshot.build}, {snapshot.device_model or '?'})",
                snapshot=snapshot,
                snapshot_ids=(snapshot.pk,),
            )
        generation = parse_generation_index(index_text)
        query = "baseline" if generation == BASELINE else generation
        return Side(
            kind="generation",
            ref=f"generation:{snapshot.pk}:{query}",
            app=snapshot.app,
            label=f"snapshot #{snapshot.pk}, {_generation_label(snapshot, generation)}",
            snapshot=snapshot,
            generation=generation,
            snapshot_ids=(snapshot.pk,),
        )
    if kind == "build":
        version, number = parse_build_spec(rest)
        build = _build_for(user, app, version, number)
        if build is None:
            where = "this app" if app is not None else "a single app of yours (name it: app=<id>)"
            raise NotFound(f"No build {rest} in {where}")
        return build_side(build, filters)
    raise RefError(f"{text!r}: a ref is snapshot:<id>, generation:<id>:<index> or build:<v>:<n>")


def resolve_pair(
    user: AnyUser, base: str, target: str, app: App | None, filters: SnapshotFilter | None = None
) -> tuple[Side, Side]:
    """Both sides, of the same app (`app`, the user's, when the request names one)."""
    if app is None and _is_build(base) and not _is_build(target):  # the app: the snapshot's
        target_side = resolve_ref(user, target, None, filters)
        return resolve_ref(user, base, target_side.app, filters), target_side
    base_side = resolve_ref(user, base, app, filters)
    target_side = resolve_ref(user, target, app or base_side.app, filters)
    if base_side.app.pk != target_side.app.pk:  # never: the target is looked for in base's app
        raise NotFound("base and target belong to different apps")
    return base_side, target_side


def _is_build(ref: str) -> bool:
    return (ref or "").startswith("build:")


def _build_for(user: AnyUser, app: App | None, version: str, number: str | None) -> Build | None:
    """The build in `app`; without one, in the one app of the user's that has it (None when
    none or several do)."""
    if app is not None:
        return find_build(app, version, number)
    builds = Build.objects.filter(app__in=apps_for_user(user), version=version)
    if number is not None:
        builds = builds.filter(number=number)
    found = list(builds.select_related("app")[:2])
    return found[0] if len(found) == 1 else None


def find_build_spec(app: App, text: str) -> Build:
    """A build named `<version>:<number>` or `<version>`; RefError when the text is no build's
    name, NotFound when the app has no such single build."""
    version, number = parse_build_spec(text or "")
    build = find_build(app, version, number)
    if build is None:
        raise NotFound(f"no single build {text!r} in {app.bundle_id}")
    return build


def build_in_app(app: App, build_id: str | None) -> Build | None:
    """The app's build of this id (a query parameter), or None."""
    pk = whole_number(build_id)
    if pk is None:
        return None
    return Build.objects.filter(app=app, pk=pk).first()
