"""Writes of triage across items: carrying the triage of merged items over to the one they
became. An item's own changes and sightings are its methods (`Triaged.change_triage`,
`Triaged.seen_in`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.utils import timezone

from memdash.core.models import App, Build
from memdash.triage.models import (
    TRIAGE_FIELDS,
    Status,
    TrackerSettings,
    Triaged,
    TriageEvent,
    display_value,
    is_member,
)

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
    their builds (`Triaged.seen_in`) for every item but the winner, so that a fix that did
    not hold is reopened."""
    items: list[T] = [target, *sources]
    order = {item.pk: position for position, item in enumerate(items)}
    winner = min(items, key=lambda item: (ACTIVITY.index(Status(item.status)), order[item.pk]))
    fixed = [item.fixed_in_build for item in items if item.status == Status.FIXED]
    assignee = next(
        (
            item.assignee
            for item in [winner, *items]
            if item.assignee is not None and is_member(item.assignee, target.app)
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
        current = type(target).objects.select_for_update().get(pk=target.pk, app_id=target.app_id)
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
                        "from": display_value(field, getattr(current, field)),
                        "to": display_value(field, value),
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
    target.refresh_from_db(fields=TRIAGE_FIELDS)
    return winner


def set_tracker_template(app: App, template: str) -> None:
    """The app's tracker's "new issue" address ('' : no tracker)."""
    TrackerSettings.objects.update_or_create(app=app, defaults={"new_issue_url": template})
