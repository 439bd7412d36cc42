"""Writes of triage: user changes with their history, and sightings that reopen a fixed item."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from memdash.core.models import Build, Membership
from memdash.triage.models import Status, Triaged, TriageEvent

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


def _validate(item: Triaged, status: Any, assignee: Any, notes: Any, fixed_in_build: Any) -> None:
    if status is not UNSET and status not in Status.values:
        raise TriageError("status", f"must be one of {', '.join(Status.values)}")
    if assignee is not UNSET and assignee is not None and not _is_member(assignee, item.app):
        raise TriageError("assignee", "the assignee must be a member of this app")
    if notes is not UNSET and not isinstance(notes, str):
        raise TriageError("notes", "must be text")
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
) -> TriageEvent | None:
    """Applies the given changes, records them as one history event, and returns it (None when
    nothing changed). Raises TriageError before writing anything when a value is not allowed."""
    _validate(item, status, assignee, notes, fixed_in_build)
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
