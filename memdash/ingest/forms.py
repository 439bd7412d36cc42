from __future__ import annotations

from django import forms

from memdash.core.selectors import apps_for_user
from memdash.ingest.processing import META_FIELDS


class UploadForm(forms.Form):
    app = forms.ModelChoiceField(queryset=None)
    file = forms.FileField(help_text="A snapshot (.json or .json.gz) or any accepted report.")
    build_version = forms.CharField(required=False, help_text="for formats that name no build")
    build_number = forms.CharField(required=False)
    device_model = forms.CharField(required=False)
    os = forms.CharField(required=False, label="OS")

    def __init__(self, *args, user, app=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["app"].queryset = apps_for_user(user)
        if app is not None:
            self.fields["app"].initial = app.pk

    def meta_fields(self) -> dict[str, str]:
        return {k: v for k, v in self.cleaned_data.items() if k in META_FIELDS and v}
