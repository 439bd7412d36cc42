"""The churn settings form, shown on the app settings page."""

from __future__ import annotations

from django import forms
from django.http import QueryDict

from memdash.churn.reads import app_threshold_percent, churn_weights
from memdash.core.models import App


class ChurnSettingsForm(forms.Form):
    """Allocator churn weights (cost per call = weight x log2(bytes)) and the regression limit."""

    calloc = forms.FloatField(min_value=0, max_value=1000)
    free = forms.FloatField(min_value=0, max_value=1000)
    malloc = forms.FloatField(min_value=0, max_value=1000)
    realloc = forms.FloatField(min_value=0, max_value=1000)
    threshold_percent = forms.FloatField(min_value=0, max_value=10000, label="Flag growth over %")

    @classmethod
    def for_app(cls, app: App, data: QueryDict | None = None) -> ChurnSettingsForm:
        initial = {**churn_weights(app), "threshold_percent": app_threshold_percent(app)}
        return cls(data, initial=initial)
