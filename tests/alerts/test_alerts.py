"""Alerts end to end: sessions land, the FOOM rule fires once, its deliveries reach real
receivers on loopback (a webhook that checks the signature and fails once, Slack, SMTP), a
digest sends one message, a new build clears the alert; retain cycles and leaks new or back."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import jsonschema
import pytest
from django.utils import timezone

from memdash.alerts.logic.messages import SIGNATURE_HEADER, verify
from memdash.alerts.models import Alert, AlertRule, Delivery, Destination
from memdash.alerts.writes import rules as writes
from memdash.alerts.writes.deliver import deliver_due
from memdash.alerts.writes.evaluate import evaluate_app
from memdash.cycles.models import Cluster
from memdash.triage.models import Status
from tests.alerts.receivers import http_receiver, smtp_receiver
from tests.foom.helpers import ago, ended, run, sessions_doc

pytestmark = pytest.mark.django_db
SCHEMA = json.loads((Path(__file__).parents[2] / "docs/schemas/alert-v1.schema.json").read_text())


def build_runs(version: str, fooms: int, runs: int = 20) -> list[dict]:
    """`runs` ended runs on one device of build `version`, the first `fooms` of them FOOMs (a
    foreground end with no other explanation), the others quit by the user, and the next launch."""
    device = f"D-{version}"
    chain = [
        run(f"{version}-{i}", ago(days=3, minutes=-i * 10), device=device, build=(version, "1"),
            end=ended() if i < fooms else ended(user_quit=True))
        for i in range(runs)
    ]  # fmt: skip
    chain.append(run(f"{version}-next", ago(days=1), device=device, build=(version, "1")))
    return chain


@pytest.fixture
def send_sessions(upload, django_capture_on_commit_callbacks):
    """Sessions of a build through the upload door, and what its commit queues (the alerts'
    evaluation) run as a worker would."""

    def send(version: str, fooms: int) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            answer = upload(sessions_doc(*build_runs(version, fooms)))
        assert answer.status_code == 202 and answer.json()["status"] == "done", answer.json()

    return send


def hook_destination(name: str, url: str) -> dict:
    return {"name": name, "kind": "webhook", "target": url}


def foom_rule(app, *destinations) -> AlertRule:
    return writes.create_rule(
        app, {"kind": "foom_rate", "significant": True, "min_runs": 10}, destinations
    )


def test_a_foom_rate_rise_alerts_once_delivered_and_signed(app, send_sessions, settings):
    with http_receiver(500) as hook:
        webhook = writes.create_destination(app, hook_destination("ops", hook.url))
        rule = foom_rule(app, webhook)
        send_sessions("8.1.0", fooms=1)  # 1 of 20
        assert not Alert.objects.exists()  # one build: nothing to rise from, no ceiling
        send_sessions("8.1.1", fooms=15)  # 15 of 20: beyond both 95% bands
        alert = Alert.objects.get()
        assert alert.rule == rule and alert.is_open
        assert alert.title == "FOOM rate of 8.1.1 (1): 75.00%"
        assert "15 of 20" in alert.text and "beyond both intervals" in alert.text
        build_id = alert.key.removeprefix("build:")
        assert alert.link == f"/apps/{app.pk}/foom/builds/{build_id}/"

        # The receiver answered 500: the delivery waits for its backoff, its error kept.
        delivery = Delivery.objects.get()
        assert (delivery.status, delivery.attempts) == ("pending", 1)
        assert delivery.last_error.startswith("HTTP 500")
        assert delivery.next_attempt_at > timezone.now()

        # Data landing again does not fire it again while it holds.
        assert evaluate_app(app) == []
        assert Alert.objects.count() == 1

        Delivery.objects.update(next_attempt_at=timezone.now())  # the backoff has passed
        assert deliver_due(webhook) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("sent", 2, "")
    assert len(hook.received) == 2
    sent = hook.received[-1]
    assert verify(webhook.secret, sent.headers[SIGNATURE_HEADER], sent.body)
    body = json.loads(sent.body)
    jsonschema.validate(body, SCHEMA)
    assert body["alerts"][0]["url"] == settings.MEMDASH_PUBLIC_URL + alert.link
    assert body["alerts"][0]["figures"]["count"] == 15

    send_sessions("8.1.2", fooms=1)  # a new build that is fine: the condition clears
    alert.refresh_from_db()
    assert not alert.is_open


def test_email_and_slack_and_a_digest(app, send_sessions, settings):
    with smtp_receiver() as (port, inbox), http_receiver() as slack:
        settings.MAILERS = {
            "default": {
                "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "OPTIONS": {"host": "127.0.0.1", "port": port, "timeout": 10},
            }
        }
        mail = writes.create_destination(
            app,
            {"name": "team", "kind": "email", "target": "team@example.com", "digest_minutes": 60},
        )
        chat = writes.create_destination(
            app, {**hook_destination("chat", slack.url), "kind": "slack"}
        )
        rule = foom_rule(app, mail, chat)
        writes.create_rule(app, {"kind": "new_problem"}, [mail])
        send_sessions("8.2.0", fooms=1)
        send_sessions("8.2.1", fooms=15)
        [message] = inbox.messages
        assert message["Subject"] == "[memdash] Chat: FOOM rate of 8.2.1 (1): 75.00%"
        assert "/foom/builds/" in message.get_payload()
        assert json.loads(slack.received[0].body)["text"].startswith("*memdash · Chat*")

        # A second alert within the digest's hour waits; then both go as one message.
        cluster = Cluster.objects.create(
            app=app, key=["ChatViewController", "ChatCell"], key_digest="d", algorithm_version="t"
        )
        evaluate_app(app)
        assert deliver_due(mail) == 0 and len(inbox.messages) == 1
        two_hours_ago = timezone.now() - timedelta(hours=2)
        Destination.objects.filter(pk=mail.pk).update(last_sent_at=two_hours_ago)
        mail.refresh_from_db()
        assert deliver_due(mail) == 1
        assert "New retain cycle: ChatViewController → ChatCell" in inbox.messages[1].get_payload()
        assert rule.alerts.count() == 1

        # Triaged, it clears; marked fixed and seen again, it is a regression: a new alert.
        Cluster.objects.filter(pk=cluster.pk).update(status=Status.OPEN)
        evaluate_app(app)
        assert not Alert.objects.get(key=f"retain cycle:{cluster.pk}").is_open
        Cluster.objects.filter(pk=cluster.pk).update(status=Status.FIXED, regression=True)
        [back] = evaluate_app(app)
        assert back.title == "Retain cycle back: ChatViewController → ChatCell"


def test_a_webhook_to_a_private_address_is_refused_in_production(app, send_sessions, settings):
    settings.MEMDASH_ALERTS_ALLOW_PRIVATE_HOSTS = False
    with http_receiver() as hook:
        webhook = writes.create_destination(app, hook_destination("x", hook.url))
        foom_rule(app, webhook)
        send_sessions("8.3.0", fooms=1)
        send_sessions("8.3.1", fooms=15)
    delivery = Delivery.objects.get()
    assert "private address" in delivery.last_error and not hook.received


def test_old_clusters_do_not_alert_a_new_rule(app):
    Cluster.objects.create(app=app, key=["A", "B"], key_digest="old", algorithm_version="t")
    writes.create_rule(app, {"kind": "new_problem"}, [])
    assert evaluate_app(app) == []
