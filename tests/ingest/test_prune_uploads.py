"""The bodies of rejected uploads (a gzip bomb, a document refused) are kept
MEMDASH_REJECTED_BODY_DAYS to be looked into, then deleted by `manage.py prune_uploads`; the
uploads stay listed with their errors, and no other body is touched."""

from __future__ import annotations

import zlib
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from memdash.ingest.models import Upload
from tests.samples import spec_example


def gzip_bomb() -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    return compressor.compress(b"\0" * (4 * 1024 * 1024)) + compressor.flush()


def finished_days_ago(answer, days: int) -> Upload:
    upload = Upload.objects.get(pk=answer.json()["id"])
    upload.finished_at = timezone.now() - timedelta(days=days, minutes=1)
    upload.save(update_fields=["finished_at"])
    assert Path(upload.file.path).is_file()
    return upload


@pytest.mark.django_db
def test_rejected_bodies_go_after_their_retention_and_nothing_else(upload, settings, capsys):
    settings.MEMDASH_MAX_DECOMPRESSED_BYTES = 1024 * 1024
    bomb = finished_days_ago(upload(gzip_bomb()), 8)
    refused = finished_days_ago(upload(b'{"format": "memdash.snapshot", "version": 1'), 9)
    recent = finished_days_ago(upload(b"not a report"), 6)
    done = finished_days_ago(upload(spec_example()), 30)
    assert [u.status for u in (bomb, refused, recent, done)] == ["rejected"] * 3 + ["done"]

    call_command("prune_uploads")  # the default: 7 days
    assert capsys.readouterr().out == "2 bodies of rejected uploads deleted\n"
    for old in (bomb, refused):
        pruned = Upload.objects.get(pk=old.pk)
        assert not Path(old.file.path).exists()
        assert (pruned.file.name, pruned.status, pruned.error) == ("", "rejected", old.error)
    for kept in (recent, done):
        assert Path(kept.file.path).is_file()
        assert Upload.objects.get(pk=kept.pk).file.name == kept.file.name

    settings.MEMDASH_REJECTED_BODY_DAYS = 5
    call_command("prune_uploads")
    assert capsys.readouterr().out == "1 bodies of rejected uploads deleted\n"
    assert not Path(recent.file.path).exists() and Path(done.file.path).is_file()
    # The page of a pruned upload still shows what became of it.
    assert Upload.objects.get(pk=bomb.pk).as_json()["error"].startswith("the decompressed body")
