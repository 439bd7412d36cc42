"""Template helpers of the triage panel."""

from __future__ import annotations

from django import template

register = template.Library()

# The fields a history event records (`TriageEvent.changes`), as the panel names them.
FIELD_LABELS = {
    "status": "Status",
    "assignee": "Assignee",
    "fixed_in_build": "Fixed in build",
    "notes": "Notes",
    "regression": "Regression",
}


@register.filter
def field_label(name: str) -> str:
    """`fixed_in_build` -> `Fixed in build`; a field not listed: its name, readable."""
    return FIELD_LABELS.get(name) or str(name).replace("_", " ").capitalize()
