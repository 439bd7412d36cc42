"""Triage in the JSON API: the fields every triaged item shows, and PATCH to change them.

In a domain's GET/PATCH API view of one item:

    item = triaged_item_for_request(request, Model, pk, "No such …")  # 404, or 400 on a bad PATCH
    return Response({..., **triage_fields(item)})
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django.contrib.auth import get_user_model
from rest_framework import serializers
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request

from memdash.core.models import Build
from memdash.core.reads.apps import is_app_contributor
from memdash.core.web.api import Contradicted, Flag, MissingReference, Text, WholeNumber, build_ref
from memdash.core.web.schema import BOOL, BUILD_REF, NO_NUL, STR, Schema, error, nullable
from memdash.triage.logic.tracker import TRACKER_URL_MAX, TRACKER_URL_PATTERN
from memdash.triage.models import UNSET, ContradictedFix, Status, Triaged, TriageError, TriageEvent
from memdash.triage.reads import new_issue_url, tracked_issue_url, triaged_item_for_user

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def parse_statuses(value: str | None) -> list[str] | None:
    """The `status` query parameter of a list: comma-separated statuses; None (all) when absent,
    400 when one is not a status."""
    if not value:
        return None
    statuses = [s for s in value.split(",") if s]
    unknown = [s for s in statuses if s not in Status.values]
    if unknown:
        raise ValidationError({"status": f"must be one or more of {', '.join(Status.values)}"})
    return statuses


# `status` of a list: comma-separated statuses (empty ones skipped), as `parse_statuses` reads it.
_STATUS = "(?:" + "|".join(Status.values) + ")"
STATUS_FILTER: Schema = {"type": "string", "pattern": f"^{_STATUS}?(?:,{_STATUS}?)*$"}
# triage_fields in JSON Schema
TRIAGE_FIELDS: dict[str, Schema] = {
    "status": {"type": "string", "enum": list(Status.values)},
    "assignee": nullable(STR),
    "notes": STR,
    "fixed_in_build": nullable(BUILD_REF),
    "regression": BOOL,
    "first_seen_build": nullable(BUILD_REF),
    "last_seen_build": nullable(BUILD_REF),
    "tracker_url": nullable(STR),
    "new_issue_url": nullable(STR),
}


def triage_fields(item: Triaged) -> dict[str, Any]:
    """status, assignee (username), notes, fixed_in_build, regression, first/last seen build."""
    return {
        "status": item.status,
        "assignee": item.assignee.get_username() if item.assignee is not None else None,
        "notes": item.notes,
        "fixed_in_build": build_ref(item.fixed_in_build),
        "regression": item.regression,
        "first_seen_build": build_ref(item.first_seen_build),
        "last_seen_build": build_ref(item.last_seen_build),
        "tracker_url": tracked_issue_url(item) or None,
        "new_issue_url": new_issue_url(item) or None,
    }


NOTES_MAX = 20000


class TriagePatchSerializer(serializers.Serializer[Any]):
    """Any subset of: status, assignee (a username of a member, or null), notes,
    fixed_in_build (a build id of the item's app, or null), tracker_url (the tracker issue's
    URL, or null); with `override: true` to say "fixed in" a build that still has occurrences
    (else 400). Needs context["item"]."""

    status = serializers.ChoiceField(choices=Status.choices, required=False)
    assignee = Text(required=False, allow_null=True, allow_blank=True)
    notes = Text(required=False, allow_blank=True, max_length=NOTES_MAX)
    fixed_in_build = WholeNumber(required=False, allow_null=True)
    tracker_url = Text(required=False, allow_null=True, allow_blank=True, max_length=2000)
    override = Flag(required=False)

    def validate_assignee(self, value: str | None) -> User | None:
        if not value:
            return None
        user = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: value}).first()
        if user is None:  # the same words as for a non-member: a member learns no usernames
            raise MissingReference("assignee", "the assignee must be a member of this app")
        return user

    def validate_fixed_in_build(self, value: int | None) -> Build | None:
        if value is None:
            return None
        build = Build.objects.filter(pk=value, app_id=self.context["item"].app_id).first()
        if build is None:
            raise MissingReference("fixed_in_build", "no such build of this app")
        return build

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs.keys() - {"override"}:
            raise serializers.ValidationError(
                "give at least one of status, assignee, notes, fixed_in_build, tracker_url"
            )
        return attrs

    def save(self, user: User) -> TriageEvent | None:  # type: ignore[override]  # needs the user
        item = self.context["item"]
        # .keys(): the stubs have BindingDict iterate its fields, Django REST framework its names
        changes: dict[str, Any] = {
            field: self.validated_data.get(field, UNSET)
            for field in self.fields.keys()  # noqa: SIM118
            if field != "override"
        }
        changes["override"] = self.validated_data.get("override", False)
        try:
            return item.change_triage(user, **changes)
        except ContradictedFix as exc:  # the build is there, and contradicts the fix: 409
            raise Contradicted(exc.field, exc.message) from None
        except TriageError as exc:
            if exc.field in ("assignee", "fixed_in_build"):  # a member or build not there
                raise MissingReference(exc.field, exc.message) from None
            raise serializers.ValidationError({exc.field: [exc.message]}) from None

    @classmethod
    def apply(cls, request: Request, item: Triaged) -> TriageEvent | None:
        """Validates request.data and applies it; raises ValidationError (HTTP 400), or
        MissingReference (404) for an assignee or build the app does not have."""
        serializer = cls(data=request.data, context={"item": item, "request": request})
        serializer.is_valid(raise_exception=True)
        # IsAuthenticated, the default permission, lets only signed-in users this far.
        return serializer.save(cast("User", request.user))


# A PATCH whose "fixed in" build still has the item, without `override` (`Contradicted`).
CONTRADICTED_FIX = error(409, "The fixed-in build still has occurrences of it: send `override`.")
TEXT: Schema = {"type": "string", "pattern": NO_NUL}  # CharField refuses a NUL
# The PATCH body in JSON Schema: at least one of the fields (any other key is overlooked).
TRIAGE_PATCH: Schema = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": list(Status.values)},
        "assignee": nullable({**TEXT, "description": "a member's username; null or empty: none"}),
        "notes": {**TEXT, "maxLength": NOTES_MAX},
        "fixed_in_build": nullable(
            {"type": "integer", "minimum": 1, "description": "a build id of the app"}
        ),
        "tracker_url": nullable(
            {
                "type": "string",
                "maxLength": TRACKER_URL_MAX,
                "pattern": TRACKER_URL_PATTERN,
                "description": "the tracker issue's http(s) address; null or empty: none",
            }
        ),
        "override": {
            "type": "boolean",
            "description": "true: mark fixed in a build that still has occurrences (recorded)",
        },
    },
    "anyOf": [
        {"required": [name]}
        for name in ("status", "assignee", "notes", "fixed_in_build", "tracker_url")
    ],
}


def triaged_item_for_request[T: Triaged](
    request: Request, model: type[T], pk: int, missing: str
) -> T:
    """The item an API view shows (GET) or whose triage it changes (PATCH, then read again as
    stored). 404 with `missing` for items of apps the user may not see, as for the apps; a
    viewer's PATCH is 403."""

    def find() -> T:
        item = triaged_item_for_user(model, request.user, pk)
        if item is None:
            raise NotFound(missing)
        return item

    item = find()
    if request.method == "PATCH":
        if not is_app_contributor(request.user, item.app):
            raise PermissionDenied("Viewers only read: an admin of the app can make you a member.")
        TriagePatchSerializer.apply(request, item)
        item = find()
    return item
