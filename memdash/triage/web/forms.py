"""The triage panel's form, for any `Triaged` item, and the helper a detail view calls on POST."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.validators import RegexValidator, URLValidator
from django.http import HttpResponseRedirect
from django.shortcuts import redirect

from memdash.core.models import Build
from memdash.core.reads.apps import app_members, builds_in_release_order, require_app_contributor
from memdash.triage.logic.tracker import (
    PLACEHOLDERS,
    TRACKER_URL_MAX,
    TRACKER_URL_PATTERN,
    filled,
)
from memdash.triage.models import ContradictedFix, Status, Triaged, TriageError, TriageEvent
from memdash.triage.reads import new_issue_url, tracked_issue_url, triage_history

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from memdash.core.auth import AuthenticatedHttpRequest

FORM_PREFIX = "triage"
NEW_ISSUE_EXAMPLE = "https://github.com/acme/chat/issues/new?title={title}&body={body}"


class TriageForm(forms.Form):
    status = forms.ChoiceField(choices=Status.choices)
    assignee = forms.TypedChoiceField(required=False, coerce=int, empty_value=None)
    fixed_in_build = forms.TypedChoiceField(
        required=False, coerce=int, empty_value=None, label="Fixed in build"
    )
    notes = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}))
    tracker_url = forms.CharField(
        required=False, max_length=TRACKER_URL_MAX, label="Tracker issue",
        validators=[RegexValidator(TRACKER_URL_PATTERN, "give the issue's http(s) address")],
    )  # fmt: skip
    # Shown only once a "fixed in" was refused (`offer_override`), labelled with the figures.
    override = forms.BooleanField(required=False)

    def __init__(self, item: Triaged, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", FORM_PREFIX)
        kwargs.setdefault(
            "initial",
            {
                "status": item.status,
                "assignee": item.assignee_id,
                "fixed_in_build": item.fixed_in_build_id,
                "notes": item.notes,
                "tracker_url": tracked_issue_url(item),
            },
        )
        super().__init__(*args, **kwargs)
        self.item = item
        self.offer_override = False
        cast(forms.TypedChoiceField, self.fields["assignee"]).choices = [("", "nobody")] + [
            (user.pk, user.get_username()) for user in app_members(item.app)
        ]
        # Newest build first: a fix is usually in one of the latest.
        cast(forms.TypedChoiceField, self.fields["fixed_in_build"]).choices = [("", "—")] + [
            (build.pk, str(build)) for build in reversed(builds_in_release_order(item.app))
        ]

    def save(self, user: User) -> TriageEvent | None:
        """Applies the form through `change_triage`; returns the history event (or None when
        nothing changed). Errors the service finds are put on the form and re-raised."""
        data = self.cleaned_data
        assignee_id, build_id = data.get("assignee"), data.get("fixed_in_build")
        try:
            return self.item.change_triage(
                user,
                status=data["status"],
                assignee=get_user_model().objects.get(pk=assignee_id) if assignee_id else None,
                fixed_in_build=Build.objects.get(pk=build_id) if build_id else None,
                notes=data.get("notes", ""),
                tracker_url=data.get("tracker_url", ""),
                override=bool(data.get("override")),
            )
        except ContradictedFix as exc:
            self.offer_override = True
            label = exc.override_label[:1].upper() + exc.override_label[1:]
            # the bound field was made (and its label copied) when the form was cleaned
            self.fields["override"].label = self["override"].label = label
            self.add_error("fixed_in_build", exc.message)
            raise
        except TriageError as exc:
            self.add_error(exc.field if exc.field in self.fields else None, exc.message)
            raise


def handle_triage_post(request: AuthenticatedHttpRequest, item: Triaged) -> tuple[TriageForm, bool]:
    """For a detail view: (the bound form, whether it was saved). On False, render the page with
    the form to show its errors."""
    form = TriageForm(item, request.POST)
    if not form.is_valid():
        return form, False
    try:
        form.save(request.user)
    except TriageError:
        return form, False
    return form, True


def triage_form_or_redirect(
    request: AuthenticatedHttpRequest, item: Triaged
) -> tuple[TriageForm | None, HttpResponseRedirect | None]:
    """For a detail view with the triage panel. GET: (None, None). A POST that saves: (None, a
    redirect back to the panel, with a message). A POST with errors: (the bound form, None);
    render the page with it, status 400. A viewer's POST: PermissionDenied (403)."""
    if request.method != "POST":
        return None, None
    require_app_contributor(request.user, item.app)  # a viewer only reads: 403
    form, saved = handle_triage_post(request, item)
    if not saved:
        return form, None
    messages.success(request, "Triage saved.")
    return None, redirect(item.get_absolute_url() + "#triage")


def triage_panel_context(item: Triaged, form: TriageForm | None = None) -> dict[str, Any]:
    """What `{% include "triage/panel.html" %}` needs: pass it into the page's context."""
    return {
        "triage_item": item,
        "triage_form": form or TriageForm(item),
        "triage_history": triage_history(item),
        "tracker_issue": tracked_issue_url(item),
        "new_issue_url": new_issue_url(item),
    }


class TrackerForm(forms.Form):
    """The app's tracker's "new issue" address, with `{title}`, `{body}` … where values go."""

    new_issue_url = forms.CharField(
        required=False, max_length=2000, label="New issue URL",
        widget=forms.TextInput(attrs={"size": 60, "placeholder": NEW_ISSUE_EXAMPLE}),
    )  # fmt: skip

    def clean_new_issue_url(self) -> str:
        template: str = self.cleaned_data["new_issue_url"].strip()
        if template:
            example = filled(template, dict.fromkeys(PLACEHOLDERS, "x"))
            URLValidator(
                schemes=["http", "https"],
                message="give the http(s) address of the tracker's new-issue page",
            )(example)
        return template
