from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django import forms

from memdash.core.reads.apps import apps_for_contributor
from memdash.ingest.writes.formats import META_FIELDS

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

    from memdash.core.models import App


class UploadForm(forms.Form):
    app: forms.ModelChoiceField[App] = forms.ModelChoiceField(queryset=None)
    file = forms.FileField(help_text="A snapshot (.json or .json.gz) or any accepted report.")
    build_version = forms.CharField(required=False, help_text="for formats that name no build")
    build_number = forms.CharField(required=False)
    device_model = forms.CharField(required=False)
    os = forms.CharField(required=False, label="OS")

    def __init__(
        self, *args: Any, user: User | AnonymousUser, app: App | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        # The apps the user may upload to: a viewer only reads.
        choices = apps_for_contributor(user)
        cast("forms.ModelChoiceField[App]", self.fields["app"]).queryset = choices
        if app is not None:
            self.fields["app"].initial = app.pk

    def meta_fields(self) -> dict[str, str]:
        return {k: v for k, v in self.cleaned_data.items() if k in META_FIELDS and v}
