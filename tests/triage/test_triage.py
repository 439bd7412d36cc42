"""The shared triage: changes with history, assignee checks, sightings and regressions, the
form, and the PATCH serializer. A retain-cycle cluster serves as the triaged item."""

from __future__ import annotations

import pytest
from django.test import RequestFactory
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory, force_authenticate

from memdash.core.models import Membership
from memdash.core.web.api import MissingReference
from memdash.core.writes import apps as core_services
from memdash.cycles.models import Cluster
from memdash.triage.models import Status, TriageError, TriageEvent
from memdash.triage.reads import triage_history
from memdash.triage.web.forms import TriageForm, handle_triage_post, triage_panel_context
from memdash.triage.web.serializers import TriagePatchSerializer, triage_fields

pytestmark = pytest.mark.django_db


@pytest.fixture
def builds(app):
    return [core_services.get_or_create_build(app, f"2.{i}", "") for i in range(1, 6)]


@pytest.fixture
def item(app):
    return Cluster.objects.create(
        app=app, key=["A", "B"], key_digest="x", algorithm_version="cycles-2026.11"
    )


def test_update_records_one_event_with_every_change(item, member, builds):
    event = item.change_triage(
        member, status=Status.OPEN, assignee=member, notes="look", fixed_in_build=builds[1]
    )
    assert item.status == Status.OPEN and item.assignee == member and item.notes == "look"
    assert event.actor == member and event.item == item
    assert event.changes == [
        {"field": "status", "from": "new", "to": "open"},
        {"field": "assignee", "from": None, "to": "member"},
        {"field": "notes", "from": "", "to": "look"},
        {"field": "fixed_in_build", "from": None, "to": "2.2"},
    ]
    # Nothing changed: no event.
    assert item.change_triage(member, status=Status.OPEN, notes="look") is None
    assert TriageEvent.objects.count() == 1
    # Clearing the assignee is a change.
    item.change_triage(member, assignee=None)
    item.refresh_from_db()
    assert item.assignee is None
    assert [e.changes for e in triage_history(item)][0] == [
        {"field": "assignee", "from": "member", "to": None}
    ]


def test_assignee_must_be_a_member(item, member, outsider):
    with pytest.raises(TriageError) as caught:
        item.change_triage(member, assignee=outsider)
    assert caught.value.field == "assignee"
    item.refresh_from_db()
    assert item.assignee is None and TriageEvent.objects.count() == 0


def test_fixed_in_build_must_be_of_the_items_app(item, member):
    other = core_services.get_or_create_app("com.other", "ios")
    foreign = core_services.get_or_create_build(other, "1.0")
    with pytest.raises(TriageError) as caught:
        item.change_triage(member, fixed_in_build=foreign)
    assert caught.value.field == "fixed_in_build"
    with pytest.raises(TriageError):
        item.change_triage(member, status="done")


def test_sightings_widen_first_and_last_seen_in_release_order(item, builds):
    item.seen_in(builds[2])
    item.seen_in(builds[0])
    item.seen_in(builds[1])
    item.refresh_from_db()
    assert (item.first_seen_build, item.last_seen_build) == (builds[0], builds[2])


def test_release_order_not_creation_order(app, item, member):
    # 2.10 is created first but is released after 2.9.
    late = core_services.get_or_create_build(app, "2.10")
    early = core_services.get_or_create_build(app, "2.9")
    item.change_triage(member, status=Status.FIXED, fixed_in_build=early)
    assert item.seen_in(late) is True
    assert item.status == Status.OPEN and item.regression


def test_seen_in_the_fix_build_or_earlier_is_no_regression(item, member, builds):
    item.change_triage(member, status=Status.FIXED, fixed_in_build=builds[2])
    assert item.seen_in(builds[2]) is False
    assert item.seen_in(builds[0]) is False
    assert item.status == Status.FIXED and not item.regression
    # Ignored items are never reopened.
    item.change_triage(member, status=Status.IGNORED)
    assert item.seen_in(builds[4]) is False
    assert item.status == Status.IGNORED


def test_form_saves_through_the_service(item, member, builds, app):
    form = TriageForm(
        item,
        {
            "triage-status": "fixed",
            "triage-assignee": str(member.pk),
            "triage-fixed_in_build": str(builds[3].pk),
            "triage-notes": "weak self",
        },
    )
    assert form.is_valid(), form.errors
    form.save(member)
    item.refresh_from_db()
    assert (item.status, item.assignee, item.fixed_in_build, item.notes) == (
        "fixed",
        member,
        builds[3],
        "weak self",
    )
    # Builds offered newest first; assignees are the app's members only.
    assert [c[1] for c in form.fields["fixed_in_build"].choices] == [
        "—", "2.5", "2.4", "2.3", "2.2", "2.1",
    ]  # fmt: skip
    assert [c[1] for c in form.fields["assignee"].choices] == ["nobody", "member"]


def test_form_refuses_a_user_who_is_not_a_member(item, member, outsider):
    request = RequestFactory().post(
        "/", {"triage-status": "open", "triage-assignee": str(outsider.pk)}
    )
    request.user = member
    form, saved = handle_triage_post(request, item)
    assert not saved and "assignee" in form.errors
    context = triage_panel_context(item, form)
    assert context["triage_form"] is form and list(context["triage_history"]) == []


def test_patch_serializer(item, member, builds):
    factory = APIRequestFactory()

    def patch(data):
        request = factory.patch("/", data, format="json")
        force_authenticate(request, member)
        drf_request = Request(request, parsers=[JSONParser()])
        drf_request.user = member
        return TriagePatchSerializer.apply(drf_request, item)

    patch({"status": "open", "assignee": "member", "fixed_in_build": builds[0].pk})
    item.refresh_from_db()
    fields = triage_fields(item)
    assert fields["status"] == "open" and fields["assignee"] == "member"
    assert fields["fixed_in_build"] == {"id": builds[0].pk, "version": "2.1", "number": ""}
    with pytest.raises(MissingReference) as caught:  # 404, with the value's path
        patch({"assignee": "outsider"})
    assert caught.value.path == "assignee"
    with pytest.raises(ValidationError):
        patch({"status": "closed"})
    with pytest.raises(ValidationError):
        patch({})
    other = core_services.get_or_create_app("com.other", "ios")
    with pytest.raises(MissingReference):
        patch({"fixed_in_build": core_services.get_or_create_build(other, "9").pk})
    patch({"assignee": None})
    item.refresh_from_db()
    assert item.assignee is None


def test_viewer_can_be_assigned(item, member, app, django_user_model):
    viewer = django_user_model.objects.create_user("viewer")
    core_services.add_member(app, viewer, Membership.VIEWER)
    item.change_triage(member, assignee=viewer)
    assert item.assignee == viewer


def test_panel_history_reads_as_sentences(item, member, builds):
    from django.template.loader import render_to_string

    item.change_triage(member, status=Status.FIXED, fixed_in_build=builds[1])
    item.seen_in(builds[4])  # seen after the fix: reopened by memdash
    html = render_to_string("triage/panel.html", triage_panel_context(item))
    history = html[html.index('<ul class="triage-history">') :].split("</ul>")[0]
    entries = [" ".join(li.split("</li>")[0].split()) for li in history.split("<li>")[1:]]
    field = '<span class="triage-field">{}</span>'
    # newest first; the actor is followed by its colon, no space before it; labels, not names
    assert "memdash <strong>reopened as a regression</strong>: " in entries[0]
    assert "member: " in entries[1] and "member :" not in entries[1]
    assert field.format("Status") + " new → fixed</span>; " in entries[1]
    assert field.format("Fixed in build") + " — → 2.2</span>" in entries[1]
    assert "fixed_in_build" not in history
