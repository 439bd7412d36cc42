"""The demo's alerts: the chat app's team asked to hear by e-mail of every new retain cycle or
leak, of a fixed one seen again, and of a build's FOOM rate above 1% (the embedded default writes
the e-mails to var/outbox/, and the alerts page shows what was sent)."""

from __future__ import annotations

from django.db.models import QuerySet

from memdash.alerts.models import AlertRule
from memdash.alerts.writes import rules as writes
from memdash.alerts.writes.deliver import deliver_due
from memdash.alerts.writes.evaluate import evaluate_app
from memdash.core.demo import START, DemoContext


def load(ctx: DemoContext) -> None:
    team = writes.create_destination(
        ctx.app, {"name": "chat-team", "kind": "email", "target": "chat-team@example.com"}
    )
    writes.create_rule(ctx.app, {"kind": "new_problem"}, [team])
    writes.create_rule(ctx.app, {"kind": "foom_rate", "threshold_percent": 1.0}, [team])
    # The team made its rules when it started using memdash, before the demo's data arrived.
    rules: QuerySet[AlertRule] = AlertRule.objects.filter(app=ctx.app)
    rules.update(created_at=START)
    evaluate_app(ctx.app)
    deliver_due(team)
