"""Members of an app: admins invite (without learning which usernames exist), change roles and
remove members (after a confirmation, by POST with CSRF); an app keeps its last admin; the old
viewers became members."""

from __future__ import annotations

import pytest
from django.test import Client

from memdash.core.models import Invitation, Membership
from memdash.core.writes import apps as services
from tests.migrations import latest, migrate

pytestmark = pytest.mark.django_db


def settings_url(app) -> str:
    return f"/apps/{app.pk}/settings/"


def signed_in(user, csrf: bool = False) -> Client:
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def message_of(response) -> str:
    return " ".join(str(m) for m in response.context["messages"])


def test_inviting_answers_alike_whether_or_not_the_user_exists(
    app, member, member_client, django_user_model
):
    django_user_model.objects.create_user("carol")
    answers = {}
    for name in ("carol", "nobody-by-this-name"):
        response = member_client.post(
            f"{settings_url(app)}members/", {"username": name, "role": "member"}, follow=True
        )
        answers[name] = (response.status_code, message_of(response).replace(name, "NAME"))
    assert answers["carol"] == answers["nobody-by-this-name"]
    assert answers["carol"][0] == 200 and "if a user has that name" in answers["carol"][1]
    # Both are pending invitations alike; nobody was made a member.
    assert sorted(Invitation.objects.values_list("username", flat=True)) == [
        "carol",
        "nobody-by-this-name",
    ]
    assert list(Membership.objects.values_list("user__username", flat=True)) == ["member"]


def test_the_invited_user_accepts_or_declines(app, member, member_client, django_user_model):
    carol = django_user_model.objects.create_user("carol")
    dave = django_user_model.objects.create_user("dave")
    for name in ("carol", "dave"):
        member_client.post(f"{settings_url(app)}members/", {"username": name, "role": "viewer"})
    page = signed_in(carol).get("/")
    assert b"Invitations" in page.content and b"com.example.chat" in page.content
    carols = Invitation.objects.get(username="carol")
    # Nobody answers another user's invitation.
    assert signed_in(dave).post(f"/invitations/{carols.pk}/", {"accept": "1"}).status_code == 404
    assert signed_in(carol).post(f"/invitations/{carols.pk}/", {"accept": "1"}).status_code == 302
    assert Membership.objects.get(user=carol, app=app).role == Membership.VIEWER
    daves = Invitation.objects.get(username="dave")
    signed_in(dave).post(f"/invitations/{daves.pk}/", {"accept": "0"})
    assert not Membership.objects.filter(user=dave).exists()
    assert not Invitation.objects.exists()
    assert signed_in(dave).get(settings_url(app)).status_code == 404


def test_an_admin_withdraws_an_invitation(app, member_client):
    member_client.post(f"{settings_url(app)}members/", {"username": "erin", "role": "member"})
    invitation = Invitation.objects.get()
    assert b"erin" in member_client.get(settings_url(app)).content
    member_client.post(f"{settings_url(app)}invitations/{invitation.pk}/cancel/")
    assert not Invitation.objects.exists()


def test_inviting_a_member_says_so(app, member, member_client):
    response = member_client.post(
        f"{settings_url(app)}members/", {"username": "member", "role": "viewer"}, follow=True
    )
    assert "is a member already" in message_of(response)
    assert not Invitation.objects.exists()


def test_only_admins_manage_members(app, member, django_user_model):
    plain = django_user_model.objects.create_user("plain")
    services.add_member(app, plain, Membership.MEMBER)
    web = signed_in(plain)
    page = web.get(settings_url(app))
    assert page.status_code == 200 and b"Invite" not in page.content
    admin_row = Membership.objects.get(user=member)
    for url, data in (
        (f"{settings_url(app)}members/", {"username": "x", "role": "admin"}),
        (f"{settings_url(app)}members/{admin_row.pk}/role/", {"role": "viewer"}),
        (f"{settings_url(app)}members/{admin_row.pk}/remove/", {"confirm": "1"}),
    ):
        assert web.post(url, data).status_code == 403
    assert Membership.objects.get(user=member).role == Membership.ADMIN
    assert not Invitation.objects.exists()


def test_removing_a_member_asks_first_and_needs_csrf(app, member, django_user_model):
    plain = django_user_model.objects.create_user("plain")
    row = services.add_member(app, plain, Membership.MEMBER)
    url = f"{settings_url(app)}members/{row.pk}/remove/"
    assert signed_in(member, csrf=True).post(url, {"confirm": "1"}).status_code == 403  # no token
    web = signed_in(member)
    ask = web.post(url)
    assert ask.status_code == 200 and b"Remove the member" in ask.content
    assert Membership.objects.filter(pk=row.pk).exists()
    assert web.post(url, {"confirm": "1"}).status_code == 302
    assert not Membership.objects.filter(pk=row.pk).exists()
    assert signed_in(plain).get(settings_url(app)).status_code == 404


def test_a_membership_of_another_app_is_not_found(app, member, member_client):
    other = services.get_or_create_app("com.other", "ios")
    row = services.add_member(other, member, Membership.ADMIN)
    assert (
        member_client.post(
            f"{settings_url(app)}members/{row.pk}/role/", {"role": "viewer"}
        ).status_code
        == 404
    )
    assert (
        member_client.post(
            f"{settings_url(app)}members/{row.pk}/remove/", {"confirm": "1"}
        ).status_code
        == 404
    )


def test_the_last_admin_stays(app, member, member_client, django_user_model):
    mine = Membership.objects.get(user=member)
    demoted = member_client.post(
        f"{settings_url(app)}members/{mine.pk}/role/", {"role": "member"}, follow=True
    )
    assert "at least one admin" in message_of(demoted)
    left = member_client.post(
        f"{settings_url(app)}members/{mine.pk}/remove/", {"confirm": "1"}, follow=True
    )
    assert "at least one admin" in message_of(left)
    # Nor can anyone else remove them, a superuser included.
    root = django_user_model.objects.create_superuser("root", password="x" * 12)
    signed_in(root).post(f"{settings_url(app)}members/{mine.pk}/remove/", {"confirm": "1"})
    assert Membership.objects.get(pk=mine.pk).role == Membership.ADMIN
    # With a second admin, the first may step down, then leave.
    other = django_user_model.objects.create_user("second-admin")
    services.add_member(app, other, Membership.ADMIN)
    member_client.post(f"{settings_url(app)}members/{mine.pk}/role/", {"role": "viewer"})
    assert Membership.objects.get(pk=mine.pk).role == Membership.VIEWER
    with pytest.raises(services.MembershipError):
        services.remove_member(Membership.objects.get(user=other))


def test_an_admin_who_leaves_is_sent_to_the_app_list(app, member, member_client, django_user_model):
    services.add_member(app, django_user_model.objects.create_user("other-admin"), "admin")
    mine = Membership.objects.get(user=member)
    response = member_client.post(f"{settings_url(app)}members/{mine.pk}/remove/", {"confirm": "1"})
    assert response.status_code == 302 and response["Location"] == "/"


def test_accepting_never_takes_a_role_away(app, member, django_user_model):
    invitation = services.invite(app, "frank", Membership.VIEWER, member)
    frank = django_user_model.objects.create_user("frank")
    services.add_member(app, frank, Membership.ADMIN)  # made admin meanwhile (e.g. the admin site)
    assert services.accept_invitation(invitation, frank).role == Membership.ADMIN


@pytest.mark.slow  # migrations back and forth
@pytest.mark.django_db(transaction=True)
def test_viewers_became_members():
    old = migrate([("core", "0002_lens_settings_moved")])
    App = old.get_model("core", "App")
    User = old.get_model("auth", "User")
    Old = old.get_model("core", "Membership")
    app = App.objects.create(bundle_id="com.example.roles", platform="ios")
    viewer = Old.objects.create(app=app, user=User.objects.create(username="v"), role="viewer")
    admin = Old.objects.create(app=app, user=User.objects.create(username="a"), role="admin")
    try:
        new = migrate([("core", "0003_member_role_invitations")]).get_model("core", "Membership")
        assert new.objects.get(pk=viewer.pk).role == "member"
        assert new.objects.get(pk=admin.pk).role == "admin"
        back = migrate([("core", "0002_lens_settings_moved")]).get_model("core", "Membership")
        assert back.objects.get(pk=viewer.pk).role == "viewer"
    finally:  # the rest of the suite runs on the latest schema
        migrate(latest())
        App.objects.filter(pk=app.pk).delete()
        User.objects.filter(username__in=["v", "a"]).delete()
