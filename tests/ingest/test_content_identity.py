"""Duplicates are judged on the content, not the bytes sent: the same capture compressed again
(another gzip mtime or level) or with whitespace around the document is one upload; and a
client's Idempotency-Key names its upload within its app."""

from __future__ import annotations

import gzip
import hashlib
import io

import orjson
import pytest

from memdash.allocations.models import Snapshot
from memdash.core.logic.reading import ContentDigest, content_sha256
from memdash.core.writes import apps as core_services
from memdash.ingest.models import Upload
from tests.samples import spec_example


def digest(*pieces: bytes) -> str:
    content = ContentDigest()
    for piece in pieces:
        content.update(piece)
    return content.hexdigest()


def one_byte_at_a_time(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def test_a_json_document_is_known_without_the_whitespace_around_it():
    bare = b'{"a": [1, 2]}'
    expected = hashlib.sha256(bare).hexdigest()
    assert digest(bare) == expected
    assert digest(b" \r\n\t" + bare + b"\n\n  \t") == expected
    # Wherever the pieces are cut (the blanks held back across them).
    assert digest(*one_byte_at_a_time(b"\n " + bare + b" \n")) == expected
    assert digest(b"[1]\n") == hashlib.sha256(b"[1]").hexdigest()


def test_whitespace_inside_a_document_and_around_other_content_counts():
    assert digest(b'{"a": 1}') != digest(b'{"a":1}')  # the bytes of the document itself
    text = b"  Direct leak of 24 byte(s)\n"
    assert digest(*one_byte_at_a_time(text)) == hashlib.sha256(text).hexdigest()
    assert digest(b" \n") == hashlib.sha256(b" \n").hexdigest()  # blank: no document to trim


def test_the_content_of_gzip_is_read_within_the_cap_or_not_at_all():
    document = orjson.dumps(spec_example())
    packed = gzip.compress(document + b"\n", mtime=7)
    assert content_sha256(io.BytesIO(packed), 10**6) == hashlib.sha256(document).hexdigest()
    assert content_sha256(io.BytesIO(packed), 100) is None  # the task refuses it, saying why
    assert content_sha256(io.BytesIO(b"\x1f\x8b broken"), 10**6) is None


@pytest.mark.django_db
def test_the_same_capture_sent_packed_otherwise_is_one_upload(upload):
    document = orjson.dumps(spec_example())
    first = upload(gzip.compress(document, mtime=0), HTTP_CONTENT_ENCODING="gzip")
    assert first.status_code == 202
    for again in (
        gzip.compress(document, mtime=1_700_000_000),  # compressed again, another time
        gzip.compress(document, compresslevel=1, mtime=0),  # another level
        document,  # not compressed
        document + b"\n",  # a trailing newline
        b"\r\n  " + document + b" \t\n",
        gzip.compress(b"\n" + document + b"\n\n", mtime=5),
    ):
        answer = upload(again)
        assert (answer.status_code, answer.json()["id"]) == (200, first.json()["id"])
        assert answer.json()["duplicate"] is True
    assert Snapshot.objects.count() == 1 and Upload.objects.count() == 1
    # Another capture is another upload.
    other = upload(spec_example(captured_at="2026-11-20T11:12:03+00:00"))
    assert other.status_code == 202 and Snapshot.objects.count() == 2


@pytest.mark.django_db
def test_an_idempotency_key_names_the_upload_within_its_app(upload, django_user_model):
    first = upload(spec_example(), HTTP_IDEMPOTENCY_KEY="capture-2026-11-20-0001")
    assert first.status_code == 202
    # Other bytes with the same key (the client rebuilt its request): the same upload.
    rebuilt = spec_example(captured_at="2026-11-20T11:12:03+00:00")
    again = upload(rebuilt, HTTP_IDEMPOTENCY_KEY="capture-2026-11-20-0001")
    assert (again.status_code, again.json()["id"]) == (200, first.json()["id"])
    assert Snapshot.objects.count() == 1
    # Another key is another upload; so is the same key in another app.
    assert upload(rebuilt, HTTP_IDEMPOTENCY_KEY="capture-2026-11-20-0002").status_code == 202
    other_app = core_services.get_or_create_app("com.example.mail", "ios", "Mail")
    other_secret = core_services.create_ingest_key(other_app)[1]
    doc = spec_example(app={"id": "com.example.mail", "platform": "ios", "name": "Mail"})
    elsewhere = upload(doc, secret=other_secret, HTTP_IDEMPOTENCY_KEY="capture-2026-11-20-0001")
    assert elsewhere.status_code == 202 and elsewhere.json()["app"] == "com.example.mail"
    assert Snapshot.objects.count() == 3


@pytest.mark.django_db
@pytest.mark.parametrize("key", ["", "k" * 256, "caf\u00e9", "tab\there"])
def test_a_bad_idempotency_key_is_refused_with_its_name(upload, key):
    answer = upload(spec_example(), HTTP_IDEMPOTENCY_KEY=key)
    assert answer.status_code == 400
    assert answer.json()["path"] == "Idempotency-Key"
    assert "1 to 255 printable ASCII characters" in answer.json()["error"]
    assert Snapshot.objects.count() == 0
    assert list(Upload.objects.values_list("status", "file")) == [(Upload.REJECTED, "")]
