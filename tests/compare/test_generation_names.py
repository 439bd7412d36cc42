"""Generations are named as Instruments names them, on every page and in every answer: a mark's
own name, else `Generation A`, `Generation B`, … in mark order; what was created before the
first mark is `Before first mark`. One function does it (`allocations.generation_name`); the
compare lens used to say `generation 2` and `before the first mark` (settled to this naming)."""

from __future__ import annotations

import pytest

from memdash.allocations.logic.analysis import generation_name
from memdash.allocations.models import Generation
from tests.compare.helpers import SNAPSHOT_A_ROWS, document, store


def test_instruments_names():
    assert [generation_name(i) for i in (0, 1, 25)] == [
        "Generation A",
        "Generation B",
        "Generation Z",
    ]
    assert generation_name(26) == "Generation AA"  # after Z, as a spreadsheet's columns go
    assert generation_name(27) == "Generation AB"
    assert generation_name(None) == "Before first mark"  # the baseline
    assert generation_name(1, "Open chat") == "Open chat"  # a mark's own name wins


@pytest.fixture
def unnamed(upload):
    """Snapshot A (marks Launch, Open, Idle) with its second mark's name taken away."""
    snapshot = store(upload, document(SNAPSHOT_A_ROWS))
    Generation.objects.filter(snapshot_id=snapshot, index=1).update(name="")
    return snapshot


@pytest.mark.django_db
def test_diff_labels_name_generations_as_instruments(api_client, unnamed):
    response = api_client.get(
        "/api/v1/diff", {"base": f"generation:{unnamed}:", "target": f"generation:{unnamed}:1"}
    )
    assert response.status_code == 200, response.content
    summary = response.json()["summary"]
    assert summary["base"]["label"] == f"snapshot #{unnamed}, Before first mark"
    assert summary["target"]["label"] == f"snapshot #{unnamed}, Generation B"
    assert summary["target"]["url"] == f"/snapshots/{unnamed}/?generation=1"


@pytest.mark.django_db
def test_generation_diff_page_names_generations_as_instruments(member_client, app, unnamed):
    response = member_client.get(f"/apps/{app.pk}/snapshots/{unnamed}/generation-diff/?target=1")
    assert response.status_code == 200
    assert response.context["choices"] == [
        ("baseline", "Before first mark"),
        (0, "Launch"),
        (1, "Generation B"),
        (2, "Idle"),
    ]
    assert [g.name for g in response.context["generations"]] == ["Launch", "Generation B", "Idle"]
    assert response.context["target"].label == f"snapshot #{unnamed}, Generation B"
    html = response.content.decode()
    assert "Generation B" in html and "(unnamed)" not in html
