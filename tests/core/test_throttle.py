"""Throttling: failed logins (django-axes), failed tokens and ingest keys (core.throttle) lock
the account and the client's address out, the right credentials too, until the lockout ends;
other clients go on; an ingest key's uploads have a quota per minute."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.test import Client, RequestFactory
from rest_framework.test import APIClient

from memdash.core.models import Membership
from memdash.core.throttle import client_address
from memdash.core.writes import apps as services
from memdash.ingest.models import Upload

pytestmark = pytest.mark.django_db

HERE, THERE = "192.0.2.10", "198.51.100.20"  # documentation addresses (RFC 5737)


@pytest.fixture
def limits(settings):
    settings.AXES_FAILURE_LIMIT = 3
    settings.MEMDASH_AUTH_FAILURE_LIMIT = 3
    settings.MEMDASH_AUTH_LOCKOUT_SECONDS = 900
    return settings


# --- logins -------------------------------------------------------------------------------------


@pytest.fixture
def alice(app, django_user_model):
    user = django_user_model.objects.create_user("alice", password="alice-right-pass")
    services.add_member(app, user, Membership.MEMBER)
    return user


def log_in(username: str, password: str, address: str = HERE):
    client = Client(REMOTE_ADDR=address)
    response = client.post("/login/", {"username": username, "password": password})
    return response, "_auth_user_id" in client.session


def test_login_locks_out_the_account_and_the_address_even_with_the_right_password(limits, alice):
    for _ in range(2):
        response, signed_in = log_in("alice", "wrong")
        assert response.status_code == 200 and not signed_in
    # The third failure reaches the limit of 3: that answer is already the lockout.
    response, _ = log_in("alice", "wrong")
    assert response.status_code == 429
    response, signed_in = log_in("alice", "alice-right-pass")
    assert response.status_code == 429 and not signed_in
    assert response["Retry-After"] == "900"
    assert "try again in 15 min" in response.content.decode()  # 900 s
    # Per account: the right password from another address is refused too.
    response, signed_in = log_in("alice", "alice-right-pass", THERE)
    assert response.status_code == 429 and not signed_in


def test_login_lockout_of_an_address_leaves_other_clients_alone(limits, alice, django_user_model):
    django_user_model.objects.create_user("bob", password="bob-right-pass")
    for _ in range(3):
        log_in("mallory", "guess")  # no such user: the address is locked out all the same
    response, signed_in = log_in("bob", "bob-right-pass")
    assert response.status_code == 429 and not signed_in
    response, signed_in = log_in("bob", "bob-right-pass", THERE)
    assert response.status_code == 302 and signed_in
    response, signed_in = log_in("alice", "alice-right-pass", THERE)
    assert response.status_code == 302 and signed_in


def test_login_is_accepted_after_the_lockout_or_a_reset(limits, alice):
    for _ in range(3):
        log_in("alice", "wrong")
    assert log_in("alice", "alice-right-pass")[0].status_code == 429
    # The lockout is 900 s from the last attempt: make the attempts 901 s old.
    for attempt in AccessAttempt.objects.all():
        attempt.attempt_time -= timedelta(seconds=901)
        attempt.save()
    response, signed_in = log_in("alice", "alice-right-pass")
    assert response.status_code == 302 and signed_in
    for _ in range(3):
        log_in("alice", "wrong")
    assert log_in("alice", "alice-right-pass")[0].status_code == 429
    call_command("axes_reset", verbosity=0)  # what an operator runs
    assert log_in("alice", "alice-right-pass")[1]


# --- API tokens ---------------------------------------------------------------------------------


def api_get(secret: str, address: str = HERE):
    return APIClient(REMOTE_ADDR=address).get("/api/v1/apps", HTTP_AUTHORIZATION=f"Token {secret}")


def test_failed_tokens_lock_the_address_out_even_for_the_right_token(limits, member, app):
    _, right = services.create_api_token(member)
    assert [api_get("mdt_wrong").status_code for _ in range(3)] == [401, 401, 401]
    refused = api_get(right)
    assert refused.status_code == 429
    assert 899 <= int(refused["Retry-After"]) <= 900  # 900 s from the third failure
    assert "Too many failed authentications" in refused.json()["error"]
    # Another address, and a signed-in session at this one, are not affected.
    assert api_get(right, THERE).json() == [
        {"id": app.pk, "bundle_id": "com.example.chat", "platform": "ios", "name": "Chat"}
    ]
    session = Client(REMOTE_ADDR=HERE)
    session.force_login(member)
    assert session.get("/api/v1/apps").status_code == 200


def test_token_lockout_ends_after_its_time(settings, member):
    settings.MEMDASH_AUTH_FAILURE_LIMIT = 2
    settings.MEMDASH_AUTH_LOCKOUT_SECONDS = 1
    _, right = services.create_api_token(member)
    api_get("mdt_wrong")
    api_get("mdt_wrong")
    assert api_get(right).status_code == 429
    time.sleep(1.1)
    assert api_get(right).status_code == 200


def test_a_revoked_token_is_refused_but_not_counted_as_a_guess(limits, member):
    old, old_secret = services.create_api_token(member)
    services.revoke_api_token(old)
    _, right = services.create_api_token(member)
    assert {api_get(old_secret).status_code for _ in range(5)} == {401}
    assert api_get(right).status_code == 200


# --- ingest keys --------------------------------------------------------------------------------


def send(secret: str, address: str = HERE, body: bytes = b"{}"):
    return Client(REMOTE_ADDR=address).post(
        "/api/v1/uploads",
        data=body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
    )


def test_failed_ingest_keys_lock_the_address_out_even_for_the_right_key(limits, ingest_secret):
    assert [send("mdk_wrong").status_code for _ in range(3)] == [401, 401, 401]
    refused = send(ingest_secret)
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert not Upload.objects.exists()  # refused before anything was read or stored
    assert send(ingest_secret, THERE).status_code == 400  # `{}` is no format: read and refused
    status = APIClient(REMOTE_ADDR=HERE).get(
        "/api/v1/uploads/1", HTTP_AUTHORIZATION=f"Bearer {ingest_secret}"
    )
    assert status.status_code == 429  # every use of a key from the locked-out address


def test_a_trusted_proxy_header_names_the_client(limits, ingest_secret):
    limits.MEMDASH_TRUSTED_PROXY_HEADER = "X-Forwarded-For"
    proxy = "10.0.0.1"

    def through_proxy(secret: str, forwarded: str):
        return Client(REMOTE_ADDR=proxy).post(
            "/api/v1/uploads",
            data=b"{}",
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {secret}",
            HTTP_X_FORWARDED_FOR=forwarded,
        )

    # The client wrote a first address itself; the proxy appended the one it saw, HERE.
    for _ in range(3):
        through_proxy("mdk_wrong", f"203.0.113.9, {HERE}")
    assert through_proxy(ingest_secret, f"203.0.113.77, {HERE}").status_code == 429
    assert through_proxy(ingest_secret, THERE).status_code == 400  # another client, same proxy


def test_client_address():
    factory = RequestFactory()
    assert client_address(factory.get("/", REMOTE_ADDR=HERE)) == HERE
    spoofed = factory.get("/", REMOTE_ADDR=HERE, HTTP_X_FORWARDED_FOR=THERE)
    assert client_address(spoofed) == HERE  # no trusted proxy: the header is the client's own


def test_client_address_behind_a_proxy(settings):
    settings.MEMDASH_TRUSTED_PROXY_HEADER = "X-Real-IP"
    factory = RequestFactory()
    assert client_address(factory.get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_REAL_IP=THERE)) == THERE
    # Not an address (stored by axes in an inet column): the connection's address instead.
    assert client_address(factory.get("/", REMOTE_ADDR="10.0.0.1", HTTP_X_REAL_IP="x")) == (
        "10.0.0.1"
    )


# --- upload quota -------------------------------------------------------------------------------


def test_uploads_beyond_the_key_quota_are_refused_and_recorded(settings, app, ingest_secret):
    settings.MEMDASH_UPLOADS_PER_KEY_PER_MINUTE = 2
    _, other_secret = services.create_ingest_key(app, "another")
    # Bodies of no format, each its own (the same bytes again would be the same upload).
    assert [send(ingest_secret, body=b'{"n": %d}' % n).status_code for n in (1, 2)] == [400, 400]
    over = send(ingest_secret, body=b'{"n": 3}')
    assert over.status_code == 429
    assert 1 <= int(over["Retry-After"]) <= 60  # the rest of the minute of the first upload
    assert over.json()["status"] == "rejected" and "more than 2 uploads" in over.json()["error"]
    assert send(other_secret, body=b'{"n": 4}').status_code == 400  # its own quota
    refused = Upload.objects.filter(key__name="", error_status=429)
    assert refused.count() == 1 and refused.get().status == Upload.REJECTED
    assert list(Upload.objects.order_by("pk").values_list("error_status", flat=True)) == [
        400,
        400,
        429,
        400,
    ]
