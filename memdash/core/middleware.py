"""What every request goes through: checks that every view would otherwise repeat, and the mark
that work is answering a request (`core.logic.collector.serving_request`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.urls import Resolver404, resolve
from rest_framework.exceptions import ValidationError

from memdash.core.logic.collector import serving_request
from memdash.core.web.http import not_found
from memdash.core.writes import follow_ups

log = logging.getLogger(__name__)


def follow_ups_after_the_answer(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """What an upload's commit sets going that only serves other pages (a build's tables, the
    alert rules, a large snapshot's Allocations List: `core.writes.follow_ups`) runs once the
    answer has been sent: the response's closing, which the WSGI server calls after writing
    it (and Django's test client before handing it over). With the embedded task backend
    that is where their time goes; with workers it is only when their tasks are queued."""

    def middleware(request: HttpRequest) -> HttpResponse:
        with follow_ups.held_past_the_answer() as waiting:
            response = get_response(request)
        if waiting:
            # Django's own hook for what a response closes (its FileResponse's files use it;
            # not in the type stubs).
            closers = response._resource_closers  # type: ignore[attr-defined]
            closers.append(partial(_run_follow_ups, waiting))
        return response

    return middleware


def _run_follow_ups(waiting: list[follow_ups.Work]) -> None:
    """The request's follow-ups, a failure logged: Django's closing of a response passes
    over what its closers raise without a word."""
    try:
        follow_ups.run_all(waiting)
    except Exception:
        log.exception("a follow-up of the request failed after its answer was sent")
        raise


def refuse_nul_characters(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """A NUL character in the path or a query parameter is a 400 before any view runs.
    PostgreSQL text cannot hold one, so a filter or lookup with it would make the database
    raise instead of matching nothing; no id, name or filter of memdash contains one."""

    def middleware(request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path:
            return _refused("the path")
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                return _refused(f"the query parameter {name.replace(chr(0), '')!r}")
        return get_response(request)

    return middleware


class OneValueQuery(QueryDict):
    """The query string of an API request: a parameter read as one value (`get`, `[]`) that was
    given more than once is a 400, as its OpenAPI document says each such parameter is one
    value (Django would answer the last). Lists are read with `getlist`, as ever."""

    def __getitem__(self, key: str) -> str:
        if len(self.getlist(key)) > 1:
            raise ValidationError({key: "given more than once"})
        return str(super().__getitem__(key))


def one_value_per_api_parameter(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Under /api/, the query is a `OneValueQuery` (its 400 is the API's, from the view)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):
            query = request.META.get("QUERY_STRING", "")
            request.GET = OneValueQuery(query, encoding=request.encoding)
        return get_response(request)

    return middleware


def _refused(where: str) -> JsonResponse:
    return JsonResponse({"error": f"{where} contains a NUL character"}, status=400)


def requests_keep_the_collector(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[[HttpRequest], HttpResponse]:
    """Every request is answered inside `core.logic.collector.serving_request`: an upload that the
    embedded tasks backend processes in the request then never pauses the process's garbage
    collector (only the task worker and management commands do)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        with serving_request():
            return get_response(request)

    return middleware


class site_404_under_debug:  # noqa: N801 (a middleware, named as the function ones are)
    """Under DEBUG (the embedded default) Django answers a 404 with its debug page, which lists
    every URL pattern; the site answers as in production instead (`core.web.http.not_found`:
    the site's page, JSON under /api/). After CommonMiddleware, so that a path missing its
    slash is still redirected, and after the user is known, for the page's header."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if settings.DEBUG:
            try:
                resolve(request.path_info, getattr(request, "urlconf", None))
            except Resolver404 as error:
                return not_found(request, error)
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        # the API's views answer their own 404s (JSON, with the message)
        if (
            settings.DEBUG
            and isinstance(exception, Http404)
            and not request.path.startswith("/api/")
        ):
            return not_found(request, exception)
        return None
