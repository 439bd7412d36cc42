"""Writes of triage: user changes with their history, and sightings that reopen a fixed item."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.utils import timezone

from memdash.core.models import Build, Membership
from memdash.triage.models import Status, TrackedIssue, TrackerSettings, Triaged, TriageEvent

if TYPE_CHECKING:
    from django.contrib.auth.models import User

from memdash.core.models import App

UNSET: Any = object()  # "leave this field as it is" (None means "clear it")


class TriageError(ValueError):
    """A triage change that cannot be made; `field` names the offending input."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _display(field: str, value: Any) -> str | None:
    if value is None:
        return None
    if field == "assignee":
        return value.get_username()
    return str(value)


def _is_member(user: User, app: App) -> bool:
    return Membership.objects.filter(user=user, app=app).exists()


def _validate(  # noqa: PLR0913 (one argument per field of the triage)
    item: Triaged, status: Any, assignee: Any, notes: Any, fixed_in_build: Any, tracker_url: Any
) -> None:
    if status is not UNSET and status not in Status.values:
        raise TriageError("status", f"must be one of {', '.join(Status.values)}")
    if assignee is not UNSET and assignee is not None and not _is_member(assignee, item.app):
        raise TriageError("assignee", "the assignee must be a member of this app")
    if notes is not UNSET and not isinstance(notes, str):
        raise TriageError("notes", "must be text")
    if tracker_url is not UNSET and not isinstance(tracker_url, str | None):
        raise TriageError("tracker_url", "must be a URL")
    if fixed_in_build not in (UNSET, None) and (
        not isinstance(fixed_in_build, Build) or fixed_in_build.app_id != item.app_id
    ):
        raise TriageError("fixed_in_build", "must be a build of this app")


def update_triage(
    item: Triaged,
    user: User | None,
    *,
    status: Any = UNSET,
    assignee: Any = UNSET,
    notes: Any = UNSET,
    fixed_in_build: Any = UNSET,
    tracker_url: Any = UNSET,
) -> TriageEvent | None:
    """Applies the given changes, records them as one history event, and returns it (None when
    nothing changed). Raises TriageError before writing anything when a value is not allowed."""
    _validate(item, status, assignee, notes, fixed_in_build, tracker_url)
    requested = {
        "status": status,
        "assignee": assignee,
        "notes": notes,
        "fixed_in_build": fixed_in_build,
    }
    with transaction.atomic():
        # Compare with the stored row, locked, so that two people editing at once both get
        # their change recorded against what was really there.
        current = type(item).objects.select_for_update().get(pk=item.pk)
        changes: list[dict[str, str | None]] = []
        for field, value in requested.items():
            if value is UNSET:
                continue
            old = getattr(current, field)
            if field in ("assignee", "fixed_in_build"):
                same = getattr(current, f"{field}_id") == (value.pk if value is not None else None)
            else:
                same = old == value
            if not same:
                changes.append(
                    {"field": field, "from": _display(field, old), "to": _display(field, value)}
                )
                setattr(current, field, value)
        if tracker_url is not UNSET:
            changes += _set_tracked_issue(current, tracker_url or "")
        if not changes:
            return None
        if status in (Status.FIXED, Status.IGNORED):
            # A regression is answered by a new decision: fixed again, or ignored.
            current.regression = False
        current.triaged_at = timezone.now()
        current.save(
            update_fields=[f for f, v in requested.items() if v is not UNSET]
            + ["regression", "triaged_at"]
        )
        event = TriageEvent.objects.create(
            item=current,
            actor=user,
            kind=TriageEvent.CHANGE,
            changes=changes,
            at=current.triaged_at,
        )
    item.refresh_from_db(fields=_TRIAGE_FIELDS)
    return event


def _set_tracked_issue(item: Triaged, url: str) -> list[dict[str, str | None]]:
    """Record (or clear, with '') the tracker issue's URL; the change, if any, for the history."""
    where = {"content_type": ContentType.objects.get_for_model(type(item)), "object_id": item.pk}
    old = TrackedIssue.objects.filter(**where).values_list("url", flat=True).first() or ""
    if old == url:
        return []
    if url:
        TrackedIssue.objects.update_or_create(**where, defaults={"url": url})
    else:
        TrackedIssue.objects.filter(**where).delete()
    return [{"field": "tracker_url", "from": old or None, "to": url or None}]


def set_tracker_template(app: App, template: str) -> None:
    """The app's tracker's "new issue" address ('' : no tracker)."""
    TrackerSettings.objects.update_or_create(app=app, defaults={"new_issue_url": template})


_TRIAGE_FIELDS = [
    "status",
    "assignee",
    "notes",
    "fixed_in_build",
    "regression",
    "triaged_at",
    "first_seen_build",
    "last_seen_build",
]


def is_later_build(build: Build, than: Build | None) -> bool:
    return than is not None and build.release_key > than.release_key


def note_seen_in_build(item: Triaged, build: Build) -> bool:
    """Records that the item occurred in `build`: widens first/last seen, and reopens the item as
    a regression when it was marked fixed in an earlier build (release order). Returns whether it
    was reopened. Call it for new occurrences as they arrive."""
    if build.app_id != item.app_id:
        raise ValueError("the build belongs to another app")
    with transaction.atomic():
        current = (
            type(item)
            .objects.select_for_update(of=("self",))  # the builds may be null: lock the item only
            .select_related("first_seen_build", "last_seen_build", "fixed_in_build")
            .get(pk=item.pk)
        )
        fields: list[str] = []
        first, last = current.first_seen_build, current.last_seen_build
        if first is None or build.release_key < first.release_key:
            current.first_seen_build = build
            fields.append("first_seen_build")
        if last is None or build.release_key > last.release_key:
            current.last_seen_build = build
            fields.append("last_seen_build")
        reopened = current.status == Status.FIXED and is_later_build(build, current.fixed_in_build)
        if reopened:
            current.status = Status.OPEN
            current.regression = True
            fields += ["status", "regression"]
            TriageEvent.objects.create(
                item=current,
                actor=None,
                kind=TriageEvent.REGRESSION,
                changes=[
                    {"field": "status", "from": Status.FIXED.value, "to": Status.OPEN.value},
                    {"field": "regression", "from": None, "to": f"seen in {build}"},
                ],
            )
        if fields:
            current.save(update_fields=fields)
    item.refresh_from_db(fields=_TRIAGE_FIELDS)
    return reopened


# Which state of the same problem wins when two items merge into one (`merge_triage`): the most
# active. Open (someone is on it) over fixed (decided, and watched: a sighting in a build after
# the fix reopens it as a regression) over ignored (decided, not watched) over new (nobody has
# decided yet: any decision beats none). The order of this tuple is the rule.
ACTIVITY = (Status.OPEN, Status.FIXED, Status.IGNORED, Status.NEW)
_RELATIONS = ("assignee", "fixed_in_build")


def _latest(builds: list[Build | None], *, earliest: bool = False) -> Build | None:
    known = [build for build in builds if build is not None]
    if not known:
        return None
    pick = min if earliest else max
    return pick(known, key=lambda build: build.release_key)


def _label(item: Triaged) -> str:
    return f"{item._meta.verbose_name} #{item.pk} ({item})"


def merge_triage[T: Triaged](target: T, sources: list[T], why: Mapping[str, str | None]) -> T:
    """Carries the triage of `sources` (items about to be deleted: their problem is now
    `target`'s) over to `target`, and answers the item whose state won.

    The state (status, with its fixed-in build and regression flag) is the most active one of
    the target and the sources, in `ACTIVITY` order (on a tie the target's, then the first
    source's); between several fixed, the latest fixed-in build (release order). The assignee
    comes with the winning state, else the first item's (target first) that has one who is
    still a member. Every source's notes are appended under a line naming it; first and last
    seen widen to cover all. The sources' history is copied to the target, and one event by
    memdash records the merge: `why` (a change line such as {"field": "regrouped", ...}) then
    the fields that changed. A caller that brings occurrences from the sources should then note
    their builds (`note_seen_in_build`) for every item but the winner, so that a fix that did
    not hold is reopened."""
    items: list[T] = [target, *sources]
    order = {item.pk: position for position, item in enumerate(items)}
    winner = min(items, key=lambda item: (ACTIVITY.index(Status(item.status)), order[item.pk]))
    fixed = [item.fixed_in_build for item in items if item.status == Status.FIXED]
    assignee = next(
        (
            item.assignee
            for item in [winner, *items]
            if item.assignee is not None and _is_member(item.assignee, target.app)
        ),
        None,
    )
    notes = [target.notes] if target.notes else []
    notes += [f"From {_label(item)}: {item.notes}" for item in sources if item.notes]
    wanted: dict[str, Any] = {
        "status": winner.status,
        "fixed_in_build": _latest(fixed)
        if winner.status == Status.FIXED
        else winner.fixed_in_build,
        "assignee": assignee,
        "notes": "\n\n".join(notes),
    }
    seen_first = _latest([item.first_seen_build for item in items], earliest=True)
    seen_last = _latest([item.last_seen_build for item in items])
    with transaction.atomic():
        current = type(target).objects.select_for_update().get(pk=target.pk)
        changes: list[dict[str, str | None]] = [dict(why)]
        for field, value in wanted.items():
            if field in _RELATIONS:
                same = getattr(current, f"{field}_id") == (value.pk if value is not None else None)
            else:
                same = getattr(current, field) == value
            if not same:
                changes.append(
                    {
                        "field": field,
                        "from": _display(field, getattr(current, field)),
                        "to": _display(field, value),
                    }
                )
                setattr(current, field, value)
        current.regression = winner.regression
        current.first_seen_build, current.last_seen_build = seen_first, seen_last
        if len(changes) > 1:
            current.triaged_at = timezone.now()
        current.save(
            update_fields=[
                *wanted,
                "regression",
                "first_seen_build",
                "last_seen_build",
                "triaged_at",
            ]
        )
        kind = ContentType.objects.get_for_model(type(target))
        TriageEvent.objects.bulk_create(
            [
                TriageEvent(
                    content_type=kind,
                    object_id=target.pk,
                    at=event.at,
                    actor_id=event.actor_id,
                    kind=event.kind,
                    changes=event.changes,
                )
                for event in TriageEvent.objects.filter(
                    content_type=kind, object_id__in=[item.pk for item in sources]
                ).order_by("at", "id")
            ]
        )
        TriageEvent.objects.create(
            item=current, actor=None, kind=TriageEvent.CHANGE, changes=changes
        )
    target.refresh_from_db(fields=_TRIAGE_FIELDS)
    return winner
