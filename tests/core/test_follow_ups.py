"""Follow-ups of a stored upload (`core.writes.follow_ups`): run once the transaction commits,
never when it rolls back, and, while a door holds them, only when it lets them go."""

from __future__ import annotations

import pytest
from django.db import transaction

from memdash.core.writes import follow_ups

pytestmark = pytest.mark.django_db(transaction=True)  # commits happen


def test_a_follow_up_runs_at_the_commit_and_not_after_a_rollback():
    ran: list[str] = []
    with transaction.atomic():
        follow_ups.after_commit(lambda: ran.append("committed"))
        assert ran == []
    with pytest.raises(RuntimeError), transaction.atomic():
        follow_ups.after_commit(lambda: ran.append("rolled back"))
        raise RuntimeError
    assert ran == ["committed"]


def test_held_follow_ups_wait_for_the_door_then_run_in_order():
    ran: list[int] = []
    with follow_ups.held() as release:
        for n in (1, 2):
            with transaction.atomic():
                follow_ups.after_commit(lambda n=n: ran.append(n))
        assert ran == []  # committed, held
        assert release() == 2 and ran == [1, 2]
        with transaction.atomic():
            follow_ups.after_commit(lambda: ran.append(3))
        assert release() == 1
        with transaction.atomic():
            follow_ups.after_commit(lambda: ran.append(4))
    assert ran == [1, 2, 3, 4]  # what was still held ran as the door closed
    with transaction.atomic():
        follow_ups.after_commit(lambda: ran.append(5))
    assert ran == [1, 2, 3, 4, 5]  # no door holds it: at the commit
