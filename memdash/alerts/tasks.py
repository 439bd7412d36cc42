"""The alerts' tasks: evaluate an app's rules after its data landed, and send what is due to a
destination (again after the backoff when a real queue can run a task later)."""

from __future__ import annotations

from datetime import timedelta

from django.core.cache import cache
from django.db import transaction
from django.tasks import task, task_backends
from django.utils import timezone

from memdash.alerts.models import AlertRule, Delivery, Destination
from memdash.alerts.writes.deliver import deliver_due
from memdash.alerts.writes.evaluate import evaluate_app
from memdash.core.models import App
from memdash.core.writes import follow_ups

# A queued evaluation that never ran (a lost worker) stops blocking new ones after this long.
QUEUED_FOR_AT_MOST = 300


@task()
def evaluate_alerts_task(app_id: int) -> int:
    """Evaluate the app's rules, then send what is due to each of its destinations."""
    cache.delete(_pending_key(app_id))  # data landing from now on queues another evaluation
    app = App.objects.filter(pk=app_id).first()
    if app is None:
        return 0
    fired = evaluate_app(app)
    for destination in Destination.objects.filter(app=app):
        deliver_alerts_task.enqueue(destination.pk)
    return len(fired)


@task()
def deliver_alerts_task(destination_id: int) -> int:
    destination = Destination.objects.filter(pk=destination_id).first()
    if destination is None:
        return 0
    sent = deliver_due(destination)
    _retry_later(destination)
    return sent


def _retry_later(destination: Destination) -> None:
    """With a queue that can run a task later, the next attempt is queued for when it is due;
    the embedded default tries again on the next evaluation or `manage.py send_alerts`."""
    backend = task_backends["default"]
    pending = destination.deliveries.filter(status=Delivery.PENDING).order_by("next_attempt_at")
    first = pending.values_list("next_attempt_at", flat=True).first()
    if first is None or not backend.supports_defer:
        return
    when = max(first, timezone.now() + timedelta(seconds=1))
    if destination.digest_minutes and destination.last_sent_at:
        when = max(when, destination.last_sent_at + timedelta(minutes=destination.digest_minutes))
    transaction.on_commit(lambda: deliver_alerts_task.using(run_after=when).enqueue(destination.pk))


def _pending_key(app_id: int) -> str:
    return f"alerts:evaluation-queued:{app_id}"


def queue_evaluation(app_id: int) -> None:
    """After the data's transaction commits, evaluate the app's rules in a task: one queued per
    app at a time (uploads that land while it waits are seen by it), none for an app without
    rules."""

    def enqueue() -> None:  # after the commit: the data's transaction reads nothing of alerts
        if not AlertRule.objects.filter(app_id=app_id, enabled=True).exists():
            return
        if cache.add(_pending_key(app_id), 1, timeout=QUEUED_FOR_AT_MOST):
            evaluate_alerts_task.enqueue(app_id)

    follow_ups.after_commit(enqueue)
