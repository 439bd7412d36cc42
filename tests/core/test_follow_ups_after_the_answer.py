"""The request's follow-ups run when its response is closed (after the server wrote it), in
the order they came, and one that fails is logged: Django's closing of a response passes over
what its closers raise without a word."""

from __future__ import annotations

import logging

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from memdash.core.middleware import follow_ups_after_the_answer
from memdash.core.writes import follow_ups

# Closing a response signals request_finished, which closes old database connections.
pytestmark = pytest.mark.django_db


def test_follow_ups_run_once_the_response_is_closed_and_a_failure_is_logged(caplog):
    done: list[str] = []

    def fail() -> None:
        raise RuntimeError("the build's tables could not be made")

    def view(request):
        assert follow_ups.after_the_answer(lambda: done.append("first"))
        assert follow_ups.after_the_answer(fail)
        return HttpResponse("answered")

    response = follow_ups_after_the_answer(view)(RequestFactory().post("/api/v1/uploads"))
    assert done == []  # answered, nothing run yet
    assert not follow_ups.after_the_answer(lambda: None)  # outside the request: not held

    with caplog.at_level(logging.ERROR, logger="memdash.core.middleware"):
        response.close()
    assert done == ["first"]
    assert "a follow-up of the request failed" in caplog.text
    assert "the build's tables could not be made" in caplog.text
