"""Bad input: a clear JSON error with the path, the upload recorded as rejected, nothing stored."""

from __future__ import annotations

import gzip
import zlib

import orjson
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from memdash.allocations.models import AllocationRow, Category, Frame, Snapshot, StackNode
from memdash.allocations.writes.snapshots import delete_snapshot
from memdash.core.writes import apps as core_services
from memdash.ingest.models import Upload
from tests.samples import spec_example

pytestmark = pytest.mark.django_db


def assert_nothing_stored() -> None:
    assert Snapshot.objects.count() == 0
    assert AllocationRow.objects.count() == 0
    assert Category.objects.count() == 0
    assert Frame.objects.count() == 0
    assert StackNode.objects.count() == 0


def assert_rejected(response, status: int, path: str | None = None, words: str = "") -> dict:
    assert response.status_code == status, response.content
    body = response.json()
    assert body["status"] == "rejected"
    if path is not None:
        assert body["path"] == path
    assert words.lower() in body["error"].lower()
    assert Upload.objects.get(pk=body["id"]).status == Upload.REJECTED
    assert_nothing_stored()
    return body


def with_row(**row) -> dict:
    doc = spec_example()
    doc["allocations"].append({"category": "X", **row})
    return doc


def test_not_json(upload):
    body = assert_rejected(upload(b"{not json"), 400, "line 1 column 2", "not valid JSON")
    assert "line 1 column 2" in body["error"]  # orjson's account: where the document breaks
    body = assert_rejected(upload(b"\n\nhello\n"), 400, "line 3", "not JSON and not a report")
    assert "reading stopped at line 3 ('hello')" in body["error"]
    assert "valgrind.memcheck-log" in body["error"]  # what it reads instead
    assert_rejected(upload(b"\x00\x01\x02binary"), 400, "byte 0", "binary data")


def test_json_but_not_an_object(upload):
    assert_rejected(upload(b"42"), 400, "", "")


def test_unknown_format(upload):
    assert_rejected(
        upload(spec_example(format="memdash.heapdump")), 400, "format", "unknown format"
    )


def test_unknown_version(upload):
    assert_rejected(upload(spec_example(version=2)), 400, "version", "version")


def test_missing_required_key(upload):
    doc = spec_example()
    del doc["captured_at"]
    assert_rejected(upload(doc), 400, "captured_at", "required")


def test_wrong_type(upload):
    assert_rejected(upload(with_row(persistent="12")), 400, "allocations[4].persistent", "integer")


def test_negative_count(upload):
    assert_rejected(upload(with_row(transient_bytes=-1)), 400, "allocations[4].transient_bytes")


def test_nan_and_infinity(upload):
    body = orjson.dumps(spec_example()).replace(b'"persistent":12', b'"persistent":NaN', 1)
    # "persistent":NaN in the one-line document: orjson stops at the N, column 765.
    assert_rejected(upload(body), 400, "line 1 column 765", "not valid JSON")
    big = orjson.dumps(spec_example()).replace(b'"persistent":12', b'"persistent":1e999', 1)
    response = upload(big)
    assert response.status_code == 400
    assert_nothing_stored()


def test_index_outside_its_list(upload):
    body = assert_rejected(upload(with_row(stack=99)), 400, "allocations[4].stack")
    assert "outside stacks" in body["error"]


def test_parent_after_child(upload):
    doc = spec_example(stacks=[[None, 0], [2, 1], [1, 2]])
    assert_rejected(upload(doc), 400, "stacks[1][0]", "must come before")


def test_free_without_address(upload):
    doc = spec_example(events=[{"t_ms": 1, "fn": "free"}])
    del doc["allocations"]
    assert_rejected(upload(doc), 400, "events[0].address", "required")


def test_corrupt_gzip(upload):
    good = gzip.compress(orjson.dumps(spec_example()))
    broken = good[:20] + bytes(b ^ 0xFF for b in good[20:40]) + good[40:]
    assert_rejected(upload(broken), 400, "", "gzip")
    assert_rejected(upload(good[: len(good) // 2]), 400, "", "gzip")


def test_gzip_body_is_accepted(upload):
    response = upload(gzip.compress(orjson.dumps(spec_example())), HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 202
    assert response.json()["status"] == "done"


def test_body_over_the_limit(upload, settings):
    settings.MEMDASH_MAX_BODY_BYTES = 100
    assert_rejected(upload(spec_example()), 413, "", "larger")


def test_gzip_bomb_is_refused_while_decompressing(upload, settings):
    settings.MEMDASH_MAX_DECOMPRESSED_BYTES = 1024 * 1024
    # 64 MiB of zeros compress to ~64 KiB; decompression stops at the 1 MiB cap.
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = compressor.compress(b"\0" * (64 * 1024 * 1024)) + compressor.flush()
    assert len(bomb) < 200_000
    assert_rejected(upload(bomb), 413, "", "decompressed")


def test_missing_wrong_and_revoked_key(client, upload, app):
    response = client.post("/api/v1/uploads", data=b"{}", content_type="application/json")
    assert response.status_code == 401
    assert upload(spec_example(), secret="mdk_not-a-key").status_code == 401
    key, secret = core_services.create_ingest_key(app)
    core_services.revoke_ingest_key(key)
    assert upload(spec_example(), secret=secret).status_code == 401
    assert_nothing_stored()


def test_key_of_another_app(upload):
    other = core_services.get_or_create_app("com.example.other", "ios")
    _, other_secret = core_services.create_ingest_key(other)
    body = assert_rejected(upload(spec_example(), secret=other_secret), 403, "app", "")
    assert "com.example.other" in body["error"]


def test_wrong_platform_is_another_app(upload):
    assert_rejected(
        upload(spec_example(app={"id": "com.example.chat", "platform": "android"})), 403
    )


def test_same_bytes_twice_give_the_same_upload(upload):
    first = upload(spec_example())
    second = upload(spec_example())
    assert first.status_code == 202 and second.status_code == 200
    assert first.json()["id"] == second.json()["id"]
    assert second.json()["duplicate"] is True
    assert Snapshot.objects.count() == 1


def test_html_in_names_is_shown_as_text(upload, member_client):
    doc = spec_example(app={"id": "com.example.chat", "platform": "ios", "name": "<b>Chat</b>"})
    doc["allocations"][0]["category"] = "<script>alert(1)</script>"
    doc["frames"][3] = "<img src=x onerror=alert(2)>"
    sid = upload(doc).json()["snapshot"]["id"]
    page = member_client.get(f"/snapshots/{sid}/").content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page


def test_strings_longer_than_their_columns(upload):
    assert_rejected(upload(spec_example(session="s" * 201)), 400, "session", "longer than 200")
    doc = spec_example(build={"version": "v" * 65})
    assert_rejected(upload(doc), 400, "build.version", "longer than 64")


def test_address_beyond_64_bits(upload):
    doc = spec_example()
    doc["frames"].append({"address": "0x1" + "0" * 16})
    assert_rejected(upload(doc), 400, "frames[4].address", "64-bit")


def test_sums_past_64_bits(upload):
    """Each value fits, but rows with one key (or all rows) add up past 2^63 - 1."""
    big = 2**63 - 1
    doc = with_row(persistent_bytes=big)
    doc["allocations"].append({"category": "X", "persistent_bytes": 1})
    assert_rejected(upload(doc), 400, "allocations", "past 2^63 - 1")
    doc = with_row(transient=big)
    doc["allocations"].append({"category": "Y", "transient": big})
    assert_rejected(upload(doc), 400, "allocations", "transient")


def test_event_sizes_past_64_bits(upload):
    doc = spec_example()
    del doc["allocations"]
    size = 2**63 - 1
    doc["events"] = [
        {"t_ms": 0, "fn": "malloc", "address": 16, "size": size},
        {"t_ms": 1, "fn": "malloc", "address": 32, "size": size},
    ]
    assert_rejected(upload(doc), 400, "events", "persistent_bytes")


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"allocations": [{"category": "A\x00B", "persistent": 1}]}, "allocations[0].category"),
        ({"threads": ["ma\x00in"]}, "threads[0]"),
        ({"build": {"version": "8.0\x00"}}, "build.version"),
        ({"device": {"id": "D\x001"}}, "device.id"),
        ({"frames": ["ma\x00in", "a", "b", "c"]}, "frames[0]"),
    ],
)
def test_nul_characters(upload, change, path):
    assert_rejected(upload(spec_example(**change)), 400, path, "NUL")


@pytest.mark.parametrize(
    ("captured_at", "words"),
    [
        ("9999-12-31T23:59:59-05:00", "years 1 to 9999"),  # past year 9999 in UTC
        ("0001-01-01T00:00:00+05:00", "years 1 to 9999"),  # before year 1 in UTC
        ("2026-W47-5T10:12:03+00:00", "not an RFC 3339"),  # ISO 8601 week date
        ("20261120T101203+0000", "not an RFC 3339"),  # ISO 8601 basic format
        ("2026-11-20T10:12+00:00", "not an RFC 3339"),  # no seconds
        ("2026-11-20T10:12:03", "not an RFC 3339"),  # no offset
        ("2026-02-30T10:12:03Z", "no date and time"),
    ],
)
def test_timestamps_outside_rfc_3339(upload, captured_at, words):
    assert_rejected(upload(spec_example(captured_at=captured_at)), 400, "captured_at", words)


def test_unhashable_event_function(upload):
    doc = spec_example()
    del doc["allocations"]
    doc["events"] = [{"t_ms": 0, "fn": [], "address": 16, "size": 8}]
    assert_rejected(upload(doc), 400, "events[0].fn", "must be one of")


def test_one_row_whose_total_bytes_pass_64_bits(upload):
    """Persistent and transient bytes each fit, but Total Bytes (their sum) does not."""
    row = {"category": "X", "persistent_bytes": 2**63 - 1, "transient_bytes": 2**63 - 1}
    doc = spec_example(allocations=[row])
    assert_rejected(upload(doc), 400, "allocations", "Total Bytes")


def test_bad_content_length(client, ingest_secret):
    response = client.generic(
        "POST", "/api/v1/uploads", b"{}", content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {ingest_secret}", CONTENT_LENGTH="abc",
    )  # fmt: skip
    assert_rejected(response, 400, "Content-Length", "whole number")


def test_nul_in_an_upload_field(client, ingest_secret):
    """In a form field (in a query parameter the request is refused before the view: 400)."""
    body = SimpleUploadedFile("s.json", orjson.dumps(spec_example()))
    response = client.post(
        "/api/v1/uploads", {"file": body, "build_version": "1\x00x"},
        HTTP_AUTHORIZATION=f"Bearer {ingest_secret}",
    )  # fmt: skip
    assert_rejected(response, 400, "build_version", "NUL")


def test_multipart_without_a_file_is_recorded(upload):
    response = upload(b"--x\r\n\r\n--x--\r\n", content_type="multipart/form-data; boundary=x")
    assert_rejected(response, 400, "file", "no `file` field")


def test_a_failed_upload_is_processed_again_when_sent_again(upload):
    """A failure on our side (here: the stored upload marked failed, as a crash leaves it) is
    not the content's fault: the same bytes again are processed, not answered from the past."""
    first = upload(spec_example()).json()
    delete_snapshot(Snapshot.objects.get())  # as the rolled-back transaction of a crash left it
    Upload.objects.filter(pk=first["id"]).update(status=Upload.FAILED, error="internal error")
    again = upload(spec_example())
    assert again.status_code == 200
    assert again.json()["id"] == first["id"]
    assert again.json()["status"] == "done"
    assert Snapshot.objects.count() == 1
