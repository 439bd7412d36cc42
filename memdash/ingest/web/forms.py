from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from django import forms

from memdash.core.reads.apps import apps_for_contributor
from memdash.ingest.writes.formats import META_FIELDS

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

    from memdash.core.models import App


class UploadForm(forms.Form):
    app: forms.ModelChoiceField[App] = forms.ModelChoiceField(queryset=None)
    file = forms.FileField(
        required=False, help_text="A snapshot (.json or .json.gz) or any accepted report."
    )
    pasted = forms.CharField(
        required=False,
        label="or paste a report",
        widget=forms.Textarea(attrs={"rows": 4, "placeholder": "leaks, LeakCanary, exit-info …"}),
        help_text="text as the tool printed it: Xcode's leaks, LeakCanary, dumpsys exit-info …",
    )
    build_version = forms.CharField(required=False, help_text="for formats that name no build")
    build_number = forms.CharField(required=False)
    device_id = forms.CharField(required=False, label="Device id")
    device_model = forms.CharField(required=False)
    os = forms.CharField(required=False, label="OS")
    utc_offset = forms.CharField(
        required=False, label="UTC offset", help_text="the device's, for exit-info (+02:00)"
    )

    def __init__(
        self, *args: Any, user: User | AnonymousUser, app: App | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        # The apps the user may upload to: a viewer only reads.
        choices = apps_for_contributor(user)
        cast("forms.ModelChoiceField[App]", self.fields["app"]).queryset = choices
        if app is not None:
            self.fields["app"].initial = app.pk

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("file") and not (data.get("pasted") or "").strip():
            raise forms.ValidationError("Choose a file, or paste a report.")
        return data

    def content(self) -> tuple[Iterable[bytes], str]:
        """The upload's bytes and file name: the file, else the pasted text."""
        upload = self.cleaned_data.get("file")
        if upload:
            return upload.chunks(), upload.name
        return [self.cleaned_data["pasted"].encode()], "pasted.txt"

    def meta_fields(self) -> dict[str, str]:
        return {k: v for k, v in self.cleaned_data.items() if k in META_FIELDS and v}
