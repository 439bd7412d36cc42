"""Template helpers of the triage panel."""

from __future__ import annotations

from typing import Any

from django import template

from memdash.core.reads.apps import is_app_contributor
from memdash.triage.models import Triaged

register = template.Library()

# The fields a history event records (`TriageEvent.changes`), as the panel names them.
FIELD_LABELS = {
    "status": "Status",
    "assignee": "Assignee",
    "fixed_in_build": "Fixed in build",
    "notes": "Notes",
    "regression": "Regression",
    "override": "Override",
    "tracker_url": "Tracker issue",
}


@register.filter
def field_label(name: str) -> str:
    """`fixed_in_build` -> `Fixed in build`; a field not listed: its name, readable."""
    return FIELD_LABELS.get(name) or str(name).replace("_", " ").capitalize()


@register.simple_tag(takes_context=True)
def may_triage(context: dict[str, Any], item: Triaged) -> bool:
    """Whether the page's user may change the item's triage (a member or admin of its app)."""
    request = context.get("request")
    return request is not None and is_app_contributor(request.user, item.app)
