"""A build's work made ahead is queued once per burst of uploads and paced by what it last
cost (core.writes.made_ahead): at most a tenth of a worker's time however large the build."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from memdash.allocations.tasks import BUILD_TABLES, queue_build_tables, refresh_build_tables
from memdash.compare.tasks import BUILD_SUMMARY, queue_build_summary, refresh_build_summary
from memdash.core.logic.pacing import wait_before_next
from memdash.core.models import Build


@pytest.mark.parametrize(
    ("cost", "wait"),
    [
        (0.0, 30.0),  # cheap: the least wait, so a burst is made at once
        (2.0, 30.0),  # 2 s every 32 s: under a tenth
        (10.0, 90.0),  # 10 s then 90 s of rest: a tenth
        (600.0, 5400.0),  # ten minutes over a huge build: an hour and a half's rest
    ],
)
def test_the_wait_keeps_the_work_to_a_tenth_of_a_worker(cost, wait):
    assert wait_before_next(cost, least=30.0, share=0.1) == pytest.approx(wait)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("made_ahead", "queue", "refresh"),
    [
        (BUILD_TABLES, queue_build_tables, refresh_build_tables),
        (BUILD_SUMMARY, queue_build_summary, refresh_build_summary),
    ],
)
def test_a_costly_making_is_queued_later(app, database_tasks, made_ahead, queue, refresh):
    build = Build.objects.create(app=app, version="1.0")
    queue(build.pk)
    queue(build.pk)  # the same burst: one task
    tasks = DBTaskResult.objects.filter(task_path__endswith=refresh.name)
    assert tasks.count() == 1
    first = tasks.get().run_after
    assert first is not None
    assert timedelta(seconds=29) < first - timezone.now() <= timedelta(seconds=30)

    refresh.call(build.pk)  # what it cost is kept; a snapshot stored after its start queues again
    cache.set(made_ahead._cost_key(build.pk), 100.0)  # as if it had taken 100 s
    queue(build.pk)
    assert tasks.count() == 2
    later = tasks.order_by("-enqueued_at").first().run_after
    assert timedelta(seconds=899) < later - timezone.now() <= timedelta(seconds=900)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("made_ahead", "queue", "refresh"),
    [
        (BUILD_TABLES, queue_build_tables, refresh_build_tables),
        (BUILD_SUMMARY, queue_build_summary, refresh_build_summary),
    ],
)
def test_one_worker_at_a_time_makes_a_build_s_and_uploads_go_first(
    app, database_tasks, made_ahead, queue, refresh
):
    """Two makings of one build at once each read all its snapshots (bench/citus.py: both
    workers on one build's trees, 1.8 GB each, uploads waiting): the second is queued again
    for after the first, and the queue gives uploads (priority 0) to a worker first."""
    build = Build.objects.create(app=app, version="1.0")
    assert refresh.priority < 0
    cache.add(made_ahead._running_key(build.pk), True)  # another worker is making it
    assert refresh.call(build.pk) == "another worker is making it"
    (again,) = DBTaskResult.objects.filter(task_path__endswith=refresh.name)
    assert again.run_after > timezone.now() + timedelta(seconds=29)
    assert made_ahead._cost_key(build.pk) not in cache  # nothing made: no cost learnt
    cache.delete(made_ahead._running_key(build.pk))  # that one finished
    assert refresh.call(build.pk) == "ok"
    assert made_ahead._running_key(build.pk) not in cache  # and this one let go
    assert cache.get(made_ahead._cost_key(build.pk)) >= 0
