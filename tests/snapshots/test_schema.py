"""docs/schemas/snapshot-v1.schema.json agrees with the server on good and bad documents."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import jsonschema
import pytest

from memdash.allocations.demo import snapshot_document
from memdash.allocations.logic.document.parse import parse_snapshot
from memdash.core.logic.errors import InvalidUpload
from tests.samples import events_example, spec_example

SCHEMA = json.loads(
    (Path(__file__).parents[2] / "docs/schemas/snapshot-v1.schema.json").read_text()
)


def demo_doc() -> dict:
    build = SimpleNamespace(version="8.0.4", number="104", commit="abc")
    device = SimpleNamespace(device_key="D1", model="iPhone14,5", os="iOS 17")
    app = SimpleNamespace(bundle_id="com.example.chat", platform="ios", name="Chat")
    ctx = SimpleNamespace(app=app, rng=random.Random(1), leaking_build=build)
    return snapshot_document(ctx, build, device, datetime(2026, 11, 1, tzinfo=UTC))


@pytest.mark.parametrize("doc", [spec_example(), events_example(), demo_doc()])
def test_good_documents_pass_both(doc):
    jsonschema.validate(doc, SCHEMA)
    parse_snapshot(doc)


@pytest.mark.parametrize(
    "change",
    [
        {"version": 2},
        {"format": "other"},
        {"trigger": "sometimes"},
        {"app": {"id": "x", "platform": "windows"}},
        {"threads": [1]},
    ],
)
def test_bad_documents_fail_both(change):
    doc = spec_example(**change)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)
    with pytest.raises(InvalidUpload):
        parse_snapshot(doc)


def test_negative_count_fails_both():
    doc = spec_example()
    doc["allocations"][0]["persistent"] = -1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMA)
    with pytest.raises(InvalidUpload, match="negative"):
        parse_snapshot(doc)
