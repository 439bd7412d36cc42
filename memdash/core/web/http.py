"""What views share: a 404 for a read that found nothing, and the size a request body declares.

Selectors only read: what they do not find they say with the model's `DoesNotExist` (an
`ObjectDoesNotExist`), whose message says what; turning that into an answer is the view's job,
here: a 404 with that message (never a 403, so that others' ids are not confirmed to exist).
The API answers it as `{"error": message}` (`core.web.api.exception_handler`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from django.core.exceptions import ObjectDoesNotExist
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found

from memdash.core.logic.errors import InvalidUpload, LengthRequired, TooLarge
from memdash.core.reads import apps as selectors

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

    from memdash.core.models import App


@contextmanager
def found() -> Iterator[None]:
    """Answer 404 for what a selector inside did not find, with its message."""
    try:
        yield
    except ObjectDoesNotExist as error:
        raise Http404(str(error)) from None


def app_or_404(user: User | AnonymousUser, app_id: int | str) -> App:
    """The app, or 404 when there is no such app or the user is not one of its members."""
    with found():
        return selectors.app_for_user(user, app_id)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The site's answer to a path that no route matches (`handler404`): under /api/ the API's
    JSON error, as for every other API error; elsewhere Django's page."""
    if request.path.startswith("/api/"):
        return JsonResponse({"error": "No such API path."}, status=404)
    return page_not_found(request, exception)


def declared_length(meta: Mapping[str, str], limit: int) -> int:
    """The body's size as its Content-Length declares it, within `limit` (an empty body is
    refused, 400). A chunked body has no declared size: it is refused (411) rather than read as
    empty, so a client that streams without a length learns to send one."""
    declared = meta.get("CONTENT_LENGTH") or ""
    if not declared:
        if "chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower():
            raise LengthRequired(
                "a chunked body has no length: send the body with a Content-Length",
                "Content-Length",
            )
        declared = "0"
    if not (declared.isascii() and declared.isdigit()):
        raise InvalidUpload(
            f"must be a whole number of bytes, not {declared[:20]!r}", "Content-Length"
        )
    if int(declared) > limit:
        raise TooLarge(f"the body is larger than the limit of {limit} bytes")
    if int(declared) == 0:  # nothing to store (the schema says a body is required)
        raise InvalidUpload("the body is empty: send the file", "body")
    return int(declared)
