from __future__ import annotations

from django import forms

from memdash.core.models import Membership


def error_text(form: forms.BaseForm) -> str:
    """A form's errors as one line, for a message."""
    # str(): ErrorList hands out its messages as text already; its stubs say it may not.
    return "; ".join(str(e) for errs in form.errors.values() for e in errs)


class KeyForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, help_text="e.g. the CI job using it")


class InviteForm(forms.Form):
    """An admin invites a username; nothing here says whether such a user exists."""

    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Membership.ROLES, initial=Membership.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.ROLES)
