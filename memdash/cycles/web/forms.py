"""Forms of the retain-cycle pages: the cluster list's filters, the system prefix list."""

from __future__ import annotations

import re
from typing import Any, cast

from django import forms

from memdash.core.logic.numbers import whole_number
from memdash.core.models import App, Build
from memdash.core.reads.apps import app_members, builds_in_release_order
from memdash.cycles.logic.clustering import Reference, WeakLink, reference_text
from memdash.cycles.models import DEFAULT_SYSTEM_PREFIXES
from memdash.cycles.reads.clusters import DEFAULT_SORT, SORTS, ClusterFilters
from memdash.triage.models import Status

MAX_PREFIXES = 200
_PREFIX = re.compile(r"^[A-Za-z0-9_.$]{1,64}$")


class ClusterFilterForm(forms.Form):
    """GET parameters of the cluster list; anything invalid falls back to the default."""

    status = forms.MultipleChoiceField(
        choices=Status.choices, required=False, widget=forms.CheckboxSelectMultiple
    )
    assignee = forms.ChoiceField(required=False)
    build_from = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=None, label="From build"
    )
    build_to = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=None, label="To build"
    )
    sort = forms.ChoiceField(choices=list(SORTS.items()), required=False)
    system = forms.BooleanField(required=False, label="Show system clusters")

    def __init__(self, app: App, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Looked up by the chosen value, None when no build was chosen.
        self.builds: dict[int | None, Build] = {b.pk: b for b in builds_in_release_order(app)}
        build_choices = [("", "any")] + [(pk, str(b)) for pk, b in self.builds.items()]
        cast(forms.TypedChoiceField, self.fields["build_from"]).choices = build_choices
        cast(forms.TypedChoiceField, self.fields["build_to"]).choices = build_choices
        cast(forms.ChoiceField, self.fields["assignee"]).choices = [
            ("", "anyone"),
            ("none", "nobody"),
        ] + [(str(u.pk), u.get_username()) for u in app_members(app)]

    def filters(self) -> ClusterFilters:
        data = self.cleaned_data if self.is_valid() else {}
        assignee = data.get("assignee") or ""
        return ClusterFilters(
            statuses=data.get("status") or None,
            include_system=bool(data.get("system")),
            assignee_id=whole_number(assignee),
            unassigned=assignee == "none",
            build_from=self.builds.get(data.get("build_from")),
            build_to=self.builds.get(data.get("build_to")),
            sort=data.get("sort") or DEFAULT_SORT,
        )


class SystemPrefixesForm(forms.Form):
    prefixes = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "cols": 30}),
        help_text="One class-name prefix per line (or separated by commas or spaces). "
        "Leave empty for the defaults: " + " ".join(DEFAULT_SYSTEM_PREFIXES),
    )

    def clean_prefixes(self) -> list[str]:
        parts = [p for p in re.split(r"[\s,]+", self.cleaned_data["prefixes"]) if p]
        bad = [p for p in parts if not _PREFIX.match(p)]
        if bad:
            raise forms.ValidationError(
                "Not a class-name prefix: "
                + ", ".join(bad[:5])
                + " (letters, digits, _ . $; at most 64 characters)"
            )
        if len(parts) > MAX_PREFIXES:
            raise forms.ValidationError(f"At most {MAX_PREFIXES} prefixes.")
        return list(dict.fromkeys(parts))  # without duplicates, in the order given


class LinkToWeakenForm(forms.Form):
    """A member's choice of the reference to weaken among the strong links of the cluster's
    minimal loop, the computed one first (its position in the loop)."""

    link = forms.TypedChoiceField(coerce=int, label="Link to weaken")

    def __init__(self, offered: list[WeakLink], *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", "weaken")
        super().__init__(*args, **kwargs)
        self.offered = {link.position: link for link in offered}
        cast(forms.TypedChoiceField, self.fields["link"]).choices = [
            (link.position, f"{reference_text(link.reference)}{' (computed)' if i == 0 else ''}")
            for i, link in enumerate(offered)
        ]

    def chosen(self) -> Reference | None:
        """The chosen reference; None when it is the computed one (the first offered)."""
        position = self.cleaned_data["link"]
        first = next(iter(self.offered))
        return None if position == first else self.offered[position].reference
