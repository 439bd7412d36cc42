from __future__ import annotations

from typing import TYPE_CHECKING

from django import forms
from django.contrib.auth import get_user_model

from memdash.core.models import Membership

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class KeyForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, help_text="e.g. the CI job using it")


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=[(Membership.VIEWER, "viewer"), (Membership.ADMIN, "admin")])

    def clean_username(self) -> User:
        username = self.cleaned_data["username"]
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise forms.ValidationError("No user with that name.")
        return user
