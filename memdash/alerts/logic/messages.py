"""What a delivery sends: the JSON payload (docs/schemas/alert-v1.schema.json), its signature,
Slack's and e-mail's text, and the backoff between attempts. Pure: alerts as plain dicts."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

SIGNATURE_HEADER = "X-Memdash-Signature"
SCHEMA = "memdash.alerts/v1"


def retry_delay(attempts: int) -> timedelta:
    """30 s after the first failure, doubling, at most an hour."""
    return timedelta(seconds=min(30 * 2 ** max(attempts - 1, 0), 3600))


def payload(app: dict[str, Any], alerts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The webhook's JSON body: the app and one or more alerts (a digest has several)."""
    return {"schema": SCHEMA, "app": app, "alerts": list(alerts)}


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """`t=<unix time>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, as Stripe signs: the receiver
    recomputes it with the destination's secret and refuses an old timestamp (replay)."""
    signed = str(timestamp).encode() + b"." + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify(secret: str, header: str, body: bytes) -> bool:
    """The receiver's side of `signature` (used by memdash's own tests and documented)."""
    parts = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    if not parts.get("t", "").isdigit():
        return False
    return hmac.compare_digest(signature(secret, int(parts["t"]), body), header)


def _line(alert: dict[str, Any]) -> str:
    return f"{alert['title']}: {alert['text']}"


def slack_body(app: dict[str, Any], alerts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """An incoming webhook's body: text with links in Slack's `<url|label>` form (its mrkdwn
    escapes `&`, `<` and `>`)."""

    def escaped(text: str) -> str:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    lines = [f"*memdash · {escaped(app['name'])}*"]
    lines += [
        f"• <{alert['url']}|{escaped(alert['title'])}>: {escaped(alert['text'])}"
        for alert in alerts
    ]
    return {"text": "\n".join(lines)}


def email_subject(app: dict[str, Any], alerts: Sequence[dict[str, Any]]) -> str:
    if len(alerts) == 1:
        return f"[memdash] {app['name']}: {alerts[0]['title']}"
    return f"[memdash] {app['name']}: {len(alerts)} alerts"


def email_text(app: dict[str, Any], alerts: Sequence[dict[str, Any]]) -> str:
    paragraphs = [f"{_line(alert)}\n{alert['url']}" for alert in alerts]
    return f"memdash alerts for {app['name']}\n\n" + "\n\n".join(paragraphs) + "\n"
