"""The alerts section's forms: a rule and a destination."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from memdash.alerts.logic.kinds import EMAILS_PATTERN, HOOK_URL_PATTERN, RuleFigures, validate
from memdash.alerts.models import EMAIL, AlertRule, Destination
from memdash.core.models import App


class RuleForm(forms.ModelForm[AlertRule]):
    class Meta:
        model = AlertRule
        fields = ["kind", "threshold_percent", "significant", "min_runs", "max_growth", "alpha"]
        labels = {
            "threshold_percent": "Above (%)",
            "significant": "or significantly above the previous build",
            "min_runs": "Once a build has runs",
            "max_growth": "Growth limit",
            "alpha": "Rank test α",
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        figures = RuleFigures(
            kind=data.get("kind", ""), threshold_percent=data.get("threshold_percent"),
            significant=bool(data.get("significant")), min_runs=data.get("min_runs") or 0,
            max_growth=data.get("max_growth") or "", alpha=data.get("alpha") or 0.0,
        )  # fmt: skip
        try:
            validate(figures)
        except ValueError as error:
            raise ValidationError(str(error)) from None
        return data


def check_target(kind: str, target: str) -> str:
    """The addresses of an e-mail destination, or the http(s) URL of a webhook, as the API reads
    them (`logic.kinds`' patterns); ValidationError otherwise."""
    target = target.strip()
    if kind == EMAIL:
        if not re.fullmatch(EMAILS_PATTERN, target):
            raise ValidationError("give one or more e-mail addresses, separated by commas")
    elif not re.fullmatch(HOOK_URL_PATTERN, target):
        raise ValidationError("give the webhook's http(s) URL")
    return target


class DestinationForm(forms.ModelForm[Destination]):
    class Meta:
        model = Destination
        fields = ["name", "kind", "target", "digest_minutes"]
        labels = {"target": "Addresses or URL", "digest_minutes": "Digest (minutes, 0: none)"}

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "kind" in data and "target" in data:
            try:
                data["target"] = check_target(data["kind"], data["target"])
            except ValidationError as error:
                self.add_error("target", error)
        return data


def destination_choices(app: App) -> list[tuple[int, str]]:
    return [(d.pk, str(d)) for d in Destination.objects.filter(app=app)]
