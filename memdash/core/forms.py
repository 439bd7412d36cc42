from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model

from memdash.core.models import Membership


class KeyForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, help_text="e.g. the CI job using it")


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=[(Membership.VIEWER, "viewer"), (Membership.ADMIN, "admin")])

    def clean_username(self):
        username = self.cleaned_data["username"]
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise forms.ValidationError("No user with that name.")
        return user


class ChurnSettingsForm(forms.Form):
    """Allocator churn weights (cost per call = weight x log2(bytes)) and the regression limit."""

    calloc = forms.FloatField(min_value=0, max_value=1000)
    free = forms.FloatField(min_value=0, max_value=1000)
    malloc = forms.FloatField(min_value=0, max_value=1000)
    realloc = forms.FloatField(min_value=0, max_value=1000)
    threshold_percent = forms.FloatField(min_value=0, max_value=10000, label="Flag growth over %")

    @classmethod
    def for_app(cls, app, data=None):
        weights = app.effective_churn_weights()
        return cls(data, initial={**weights, "threshold_percent": app.churn_threshold_percent})
