"""Reads of triage: an item for a user, an item's history."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.contenttypes.models import ContentType
from django.db.models import QuerySet

from memdash.core.reads.apps import apps_for_user
from memdash.triage.models import Triaged, TriageEvent

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
