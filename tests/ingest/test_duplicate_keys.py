"""A key named twice in one JSON object is refused with its path, in an upload's document and in
an API request's body; orjson and msgspec would keep the last value silently."""

from __future__ import annotations

import orjson
import pytest

from memdash.allocations.models import Snapshot
from memdash.core.logic.json_keys import duplicate_key, format_path, has_duplicate_key
from memdash.cycles.models import Cluster
from memdash.ingest.models import Upload
from tests.cycles.helpers import builds, loop, store
from tests.samples import spec_example


def test_the_first_duplicate_is_found_with_its_path():
    assert duplicate_key(b'{"a": 1, "b": [{"x": 1}, {"y": 2, "y": 3}]}') == ["b", 1, "y"]
    assert duplicate_key(b'[1, {"a": {"b": {}}}, {"q": 1, "q": 2}]') == [2, "q"]
    assert duplicate_key(b'{"allocations": [], "allocations": [1]}') == ["allocations"]
    assert duplicate_key(b'{"a": {"a": 1}, "b": {"a": 2}}') is None  # one per object
    assert duplicate_key(b"not json at all") is None  # its parse says why, elsewhere
    assert format_path(["allocations", 3, "persistent"]) == "allocations[3].persistent"
    assert format_path([0, "a"]) == "[0].a"


def with_rows_twice(doc: dict) -> bytes:
    """The document with its `allocations` key written twice: the first list, then one row."""
    text = orjson.dumps(doc)
    second = b'"allocations":' + orjson.dumps(doc["allocations"][:1]) + b","
    return text.replace(b'"allocations":', second + b'"allocations":', 1)


@pytest.mark.django_db
def test_an_upload_naming_a_key_twice_is_refused_with_its_path(upload):
    doc = spec_example()
    answer = upload(with_rows_twice(doc))
    assert answer.status_code == 400, answer.content
    body = answer.json()
    assert (body["status"], body["path"]) == ("rejected", "allocations")
    assert "named twice" in body["error"]
    assert Upload.objects.get(pk=body["id"]).status == Upload.REJECTED
    assert not Snapshot.objects.exists()


@pytest.mark.django_db
def test_a_row_naming_a_key_twice_is_refused_with_the_rows_path(upload):
    text = orjson.dumps(spec_example()).decode()
    # The second row says its persistent bytes twice.
    rows = orjson.loads(text)["allocations"]
    second = orjson.dumps(rows[1]).decode()
    twice = second[:-1] + ',"persistent_bytes":1}'
    answer = upload(text.replace(second, twice, 1).encode())
    assert answer.status_code == 400, answer.content
    assert answer.json()["path"] == "allocations[1].persistent_bytes"
    assert not Snapshot.objects.exists()


@pytest.mark.django_db
def test_an_api_body_naming_a_key_twice_is_refused(api_client, app):
    store(app, builds(app, 1)[0], [loop("A", "B")], device_key="D-1")
    cluster = Cluster.objects.get()
    answer = api_client.generic(
        "PATCH", f"/api/v1/cycles/{cluster.pk}",
        b'{"status": "fixed", "status": "open"}', content_type="application/json",
    )  # fmt: skip
    assert answer.status_code == 400
    assert answer.json()["path"] == "status" and "named twice" in answer.json()["error"]
    cluster.refresh_from_db()
    assert cluster.status != "fixed"


def test_whether_a_key_is_named_twice():
    assert has_duplicate_key(b'[{"a": 1}, {"b": {"c": 1, "c": 1}}]')
    assert not has_duplicate_key(b'[{"a": 1}, {"a": 2}]')
    assert not has_duplicate_key(b"{not json")  # its parse says why, elsewhere
