"""Sending what is due: each destination's pending deliveries, one message per alert or, with a
digest interval, one message for all of them once the interval has passed. A failure is kept on
the delivery (`last_error`) and tried again after the backoff (`Delivery.mark_failed_attempt`)."""

from __future__ import annotations

import ipaddress
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.utils import timezone

from memdash.alerts.logic import messages
from memdash.alerts.models import EMAIL, SLACK, WEBHOOK, Delivery, Destination
from memdash.alerts.reads import alert_json, app_json

TIMEOUT_SECONDS = 10


class DeliveryError(Exception):
    """Why a message did not reach its receiver (kept as the delivery's last error)."""


def deliver_due(destination: Destination) -> int:
    """Send the destination's due deliveries; how many were sent."""
    now = timezone.now()
    with transaction.atomic():
        # One sender per destination at a time: a digest's interval is read and set under lock.
        destination = Destination.objects.select_for_update().get(pk=destination.pk)
        due = list(
            destination.deliveries.select_for_update(skip_locked=True)
            .filter(status=Delivery.PENDING, next_attempt_at__lte=now)
            .select_related("alert", "alert__app")
            .order_by("pk")
        )
        if not due or not destination.digest_due(now):
            return 0
        batches = [due] if destination.digest_minutes else [[delivery] for delivery in due]
        sent = sum(_send_batch(destination, batch) for batch in batches)
        if sent:
            destination.last_sent_at = now
            destination.save(update_fields=["last_sent_at"])
    return sent


def _send_batch(destination: Destination, batch: Sequence[Delivery]) -> int:
    app = app_json(batch[0].alert.app)
    alerts = [alert_json(delivery.alert) for delivery in batch]
    try:
        message = send(destination, app, alerts)
    except DeliveryError as error:
        for delivery in batch:
            delivery.mark_failed_attempt(str(error), "")
        return 0
    return sum(delivery.mark_sent(message) for delivery in batch)


def send(destination: Destination, app: dict[str, Any], alerts: list[dict[str, Any]]) -> str:
    """Send one message; what was sent (for the notifications page), or DeliveryError."""
    if destination.kind == EMAIL:
        return _send_email(destination, app, alerts)
    if destination.kind == SLACK:
        body = json.dumps(messages.slack_body(app, alerts)).encode()
        _post(destination.target, body, {})
        return body.decode()
    if destination.kind == WEBHOOK:
        body = json.dumps(messages.payload(app, alerts), sort_keys=True).encode()
        signed = messages.signature(destination.secret, int(time.time()), body)
        _post(destination.target, body, {messages.SIGNATURE_HEADER: signed})
        return body.decode()
    raise DeliveryError(f"no such kind of destination: {destination.kind}")


def _send_email(destination: Destination, app: dict[str, Any], alerts: list[dict[str, Any]]) -> str:
    subject = messages.email_subject(app, alerts)
    text = messages.email_text(app, alerts)
    addresses = [address.strip() for address in destination.target.split(",") if address.strip()]
    try:
        EmailMessage(subject, text, settings.DEFAULT_FROM_EMAIL, addresses).send()
    except (OSError, ValueError) as error:  # smtplib's errors are OSErrors
        raise DeliveryError(f"{type(error).__name__}: {error}") from error
    return f"Subject: {subject}\nTo: {', '.join(addresses)}\n\n{text}"


def _post(url: str, body: bytes, headers: dict[str, str]) -> None:
    _refuse_private_host(url)
    headers = {"Content-Type": "application/json", "User-Agent": "memdash-alerts/1", **headers}
    # Only http(s): _refuse_private_host checked the scheme.
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as answer:  # noqa: S310
            answer.read(4096)
    except urllib.error.HTTPError as error:
        raise DeliveryError(
            f"HTTP {error.code}: {error.read(200).decode(errors='replace')}"
        ) from error
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise DeliveryError(f"{type(error).__name__}: {error}") from error


def _refuse_private_host(url: str) -> None:
    """Unless MEMDASH_ALERTS_ALLOW_PRIVATE_HOSTS, a webhook may not reach the server's own
    network (loopback, private, link-local addresses): an app admin is not the operator."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DeliveryError(f"not an http(s) URL: {url[:200]}")
    if settings.MEMDASH_ALERTS_ALLOW_PRIVATE_HOSTS:
        return
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or 443, proto=socket.IPPROTO_TCP)
    except OSError as error:
        raise DeliveryError(f"{parts.hostname}: {error}") from error
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global:
            raise DeliveryError(f"{parts.hostname} is a private address ({address}): refused")
