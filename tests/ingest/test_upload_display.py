"""The upload pages write sizes in binary units, as every other page does (not Django's
decimal-ish "7.3 KB" / "780 bytes"), and times with their zone."""

from __future__ import annotations

import pytest

from memdash.core.logic.units import format_bytes
from memdash.ingest.models import Upload
from tests.foom.helpers import ago, ended, run, sessions_doc

pytestmark = pytest.mark.django_db


def test_sizes_in_binary_units_and_times_with_their_zone(upload, member_client, app):
    doc = sessions_doc(run("a-1", ago(days=3), end=ended(user_quit=True)), run("a-2", ago(days=2)))
    stored = Upload.objects.get(pk=upload(doc).json()["id"])
    size = format_bytes(stored.size)  # e.g. "780 Bytes" or "1.23 KiB"
    for url in (f"/apps/{app.pk}/uploads/", f"/uploads/{stored.pk}/"):
        html = member_client.get(url).content.decode()
        assert size in html, url
        assert " KB" not in html and " bytes<" not in html
        assert stored.created_at.strftime("%Y-%m-%d %H:%M:%S UTC") in html
