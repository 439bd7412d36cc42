"""Reads of triage: an item for a user, its history, its tracker issue and "new issue" link."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db.models import QuerySet

from memdash.core.models import App
from memdash.core.reads.apps import apps_for_user
from memdash.triage.logic.tracker import filled, issue_body
from memdash.triage.models import TrackedIssue, TrackerSettings, Triaged, TriageEvent

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

# Loaded with an item: its app, and what its triage fields show.
TRIAGE_RELATIONS = ("app", "assignee", "first_seen_build", "last_seen_build", "fixed_in_build")


def triaged_item_for_user[T: Triaged](
    model: type[T], user: User | AnonymousUser, pk: int
) -> T | None:
    """The item of `model` with this id, None when there is none in the apps the user may see."""
    return (
        model.objects.filter(pk=pk, app__in=apps_for_user(user))
        .select_related(*TRIAGE_RELATIONS)
        .first()
    )


def triage_history(item: Triaged, limit: int = 100) -> QuerySet[TriageEvent]:
    """Newest first."""
    return TriageEvent.objects.filter(
        content_type=ContentType.objects.get_for_model(type(item)), object_id=item.pk
    ).select_related("actor")[:limit]


def tracked_issue_url(item: Triaged) -> str:
    """The URL of the tracker's issue recorded for the item ('' when none)."""
    found = TrackedIssue.objects.filter(
        content_type=ContentType.objects.get_for_model(type(item)), object_id=item.pk
    ).first()
    return found.url if found is not None else ""


def new_issue_template(app: App) -> str:
    return (
        TrackerSettings.objects.filter(app=app).values_list("new_issue_url", flat=True).first()
        or ""
    )


def new_issue_url(item: Triaged) -> str:
    """The app's tracker's "new issue" page prefilled with the item ('' without a tracker)."""
    template = new_issue_template(item.app)
    if not template:
        return ""
    title = str(item)
    first = str(item.first_seen_build or "")
    last = str(item.last_seen_build or "")
    count = str(getattr(item, "occurrences", "") or "")
    url = settings.MEMDASH_PUBLIC_URL.rstrip("/") + item.get_absolute_url()
    body = issue_body(title, first, last, count, url)
    values = {"title": title, "body": body, "build": last or first, "count": count, "url": url}
    return filled(template, values)
