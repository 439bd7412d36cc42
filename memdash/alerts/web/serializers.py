"""The API's bodies for rules and destinations: strict JSON types, and the same checks as the
page's forms (`logic.kinds`: the figures a checker can read, the fields' patterns)."""

from __future__ import annotations

import re
from typing import Any

from rest_framework import serializers

from memdash.alerts.logic.kinds import (
    EMAILS_PATTERN,
    HOOK_URL_PATTERN,
    KINDS,
    MAX_RUNS,
    NAME_PATTERN,
    RuleFigures,
    validate,
)
from memdash.alerts.models import DESTINATION_KINDS, EMAIL
from memdash.core.logic.numbers import MAX_INT64
from memdash.core.web.api import Flag, Number, Text, WholeNumber
from memdash.core.web.schema import GROWTH


class RuleSerializer(serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=list(KINDS))
    threshold_percent = Number(required=False, allow_null=True, min_value=0, max_value=100)
    significant = Flag(required=False)
    min_runs = WholeNumber(required=False, min_value=0, max_value=MAX_RUNS)
    max_growth = Text(required=False, max_length=32)
    alpha = Number(required=False)
    enabled = Flag(required=False)
    destinations = serializers.ListField(
        child=WholeNumber(min_value=1, max_value=MAX_INT64), required=False
    )

    def validate_max_growth(self, value: str) -> str:
        if not re.fullmatch(str(GROWTH["pattern"]), value):
            raise serializers.ValidationError("'5%' or bytes like '1MiB'")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError("give at least one of the rule's fields")
        current = self.instance
        figures: dict[str, Any] = {
            name: attrs.get(name, getattr(current, name) if current is not None else default)
            for name, default in (
                ("kind", ""), ("threshold_percent", None), ("significant", True),
                ("min_runs", 100), ("max_growth", "5%"), ("alpha", 0.05),
            )
        }  # fmt: skip
        try:
            validate(RuleFigures(**figures))
        except ValueError as error:
            raise serializers.ValidationError(str(error)) from None
        return attrs


class DestinationSerializer(serializers.Serializer[Any]):
    name = Text(max_length=100, trim_whitespace=False)
    kind = serializers.ChoiceField(choices=[kind for kind, _ in DESTINATION_KINDS])
    target = Text(max_length=2000, trim_whitespace=False)
    digest_minutes = WholeNumber(required=False, min_value=0, max_value=MAX_RUNS)

    def validate_name(self, value: str) -> str:
        if not re.fullmatch(NAME_PATTERN, value):
            raise serializers.ValidationError("give the destination a name")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        pattern = EMAILS_PATTERN if attrs["kind"] == EMAIL else HOOK_URL_PATTERN
        if not re.fullmatch(pattern, attrs["target"]):
            what = (
                "e-mail addresses, separated by commas"
                if attrs["kind"] == EMAIL
                else "an http(s) URL"
            )
            raise serializers.ValidationError({"target": f"give {what}"})
        return attrs
