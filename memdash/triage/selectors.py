"""Reads of triage: an item's history."""

from __future__ import annotations

from django.contrib.contenttypes.models import ContentType
from django.db.models import QuerySet

from memdash.triage.models import Triaged, TriageEvent


def triage_history(item: Triaged, limit: int = 100) -> QuerySet[TriageEvent]:
    """Newest first."""
    return TriageEvent.objects.filter(
        content_type=ContentType.objects.get_for_model(type(item)), object_id=item.pk
    ).select_related("actor")[:limit]
