"""Triage shared by every kind of grouped problem (retain-cycle clusters, leak groups).

A domain's group model inherits `Triaged` and has an `app` foreign key to `core.App`. Its
triage's life cycle is its methods: `change_triage` (a person's change, checked, with its
history) and `seen_in` (a sighting, which reopens an item fixed in an earlier build as a
regression), each one transaction on the locked row; `memdash.triage.writes.merge_triage`
carries the triage of merged items over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Self

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey, GenericRelation
from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction
from django.db.models import Q
from django.utils import timezone

from memdash.core.models import Build, Membership
from memdash.triage.logic.tracker import is_tracker_url

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from memdash.core.models import App


class Status(models.TextChoices):
    NEW = "new", "new"
    OPEN = "open", "open"
    FIXED = "fixed", "fixed"
    IGNORED = "ignored", "ignored"


UNSET: Any = object()  # "leave this field as it is" (None means "clear it")

# What an item's triage is, as read again after a change.
TRIAGE_FIELDS = [
    "status",
    "assignee",
    "notes",
    "fixed_in_build",
    "regression",
    "triaged_at",
    "first_seen_build",
    "last_seen_build",
]


class TriageError(ValueError):
    """A triage change that cannot be made; `field` names the offending input."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class ContradictedFix(TriageError):
    """ "Fixed in" a build that still has occurrences of the item: the data says otherwise. A
    person who knows better (the occurrences come from a test run of the unfixed code, say) may
    override it, and the history says so."""

    def __init__(self, build: Build, occurrences: int) -> None:
        self.build = build
        self.occurrences = occurrences
        super().__init__(
            "fixed_in_build",
            f"{build} still has {occurrences} {plural(occurrences, 'occurrence')} of this item: "
            "choose the build that no longer has it, or override",
        )

    @property
    def override_label(self) -> str:
        return override_label(self.build, self.occurrences)


def plural(count: int, word: str) -> str:
    return word if count == 1 else f"{word}s"


def override_label(build: Build, occurrences: int) -> str:
    """The words of an override, on the form's checkbox and in the history."""
    return f"fixed despite {occurrences} {plural(occurrences, 'occurrence')} in {build}"


def display_value(field: str, value: Any) -> str | None:
    """A triage field's value as the history keeps it (it still reads right once a user or a
    build is deleted)."""
    if value is None:
        return None
    if field == "assignee":
        return str(value.get_username())
    return str(value)


def is_member(user: User, app: App) -> bool:
    return Membership.objects.filter(user=user, app=app).exists()


def is_later_build(build: Build, than: Build | None) -> bool:
    return than is not None and build.release_key > than.release_key


class Triaged(models.Model):
    """Status, assignee, notes, the build that fixed it, and where it was seen.

    Subclasses must define `app = models.ForeignKey("core.App", ...)`."""

    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.NEW, db_index=True
    )
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    notes = models.TextField(blank=True, default="")
    fixed_in_build = models.ForeignKey(
        "core.Build", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Set when an item marked fixed is seen again in a later build than its fix.
    regression = models.BooleanField(default=False)
    first_seen_build = models.ForeignKey(
        "core.Build", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_seen_build = models.ForeignKey(
        "core.Build", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    triaged_at = models.DateTimeField(null=True, blank=True)
    # Deleting an item deletes its history with it.
    triage_events = GenericRelation("triage.TriageEvent")

    if TYPE_CHECKING:  # what every subclass defines
        app: models.ForeignKey[App, App]
        app_id: int
        objects: ClassVar[models.Manager[Self]]

        def get_absolute_url(self) -> str: ...

    class Meta:
        abstract = True

    def occurrences_in(self, build: Build) -> int:
        """How many occurrences of the item `build` has (each kind counts its own)."""
        raise NotImplementedError

    def _check(  # noqa: PLR0913 (one argument per field of the triage)
        self, status: Any, assignee: Any, notes: Any, fixed_in_build: Any, tracker_url: Any
    ) -> None:
        if status is not UNSET and status not in Status.values:
            raise TriageError("status", f"must be one of {', '.join(Status.values)}")
        if assignee is not UNSET and assignee is not None and not is_member(assignee, self.app):
            raise TriageError("assignee", "the assignee must be a member of this app")
        if notes is not UNSET and not isinstance(notes, str):
            raise TriageError("notes", "must be text")
        if tracker_url is not UNSET and not (
            tracker_url is None or (isinstance(tracker_url, str) and is_tracker_url(tracker_url))
        ):
            raise TriageError("tracker_url", "must be an http(s) address")
        if fixed_in_build not in (UNSET, None) and (
            not isinstance(fixed_in_build, Build) or fixed_in_build.app_id != self.app_id
        ):
            raise TriageError("fixed_in_build", "must be a build of this app")

    def change_triage(
        self,
        user: User | None,
        *,
        status: Any = UNSET,
        assignee: Any = UNSET,
        notes: Any = UNSET,
        fixed_in_build: Any = UNSET,
        tracker_url: Any = UNSET,
        override: bool = False,
    ) -> TriageEvent | None:
        """Apply a person's changes, record them as one history event, and return it (None when
        nothing changed). Raises TriageError before writing anything when a value is not
        allowed, and ContradictedFix when the change says "fixed in" a build that still has
        occurrences of the item, unless `override` (then the history records the override)."""
        self._check(status, assignee, notes, fixed_in_build, tracker_url)
        requested = {
            "status": status,
            "assignee": assignee,
            "notes": notes,
            "fixed_in_build": fixed_in_build,
        }
        with transaction.atomic():
            # Compare with the stored row, locked, so that two people editing at once both get
            # their change recorded against what was really there.
            # The app too: on Citus a row is locked only where the query names its app.
            current = type(self).objects.select_for_update().get(Q(app_id=self.app_id), pk=self.pk)
            changes: list[dict[str, str | None]] = []
            for field, value in requested.items():
                if value is UNSET:
                    continue
                old = getattr(current, field)
                if field in ("assignee", "fixed_in_build"):
                    same = getattr(current, f"{field}_id") == (
                        value.pk if value is not None else None
                    )
                else:
                    same = old == value
                if not same:
                    changes.append(
                        {
                            "field": field,
                            "from": display_value(field, old),
                            "to": display_value(field, value),
                        }
                    )
                    setattr(current, field, value)
            if tracker_url is not UNSET:
                changes += TrackedIssue.record(current, tracker_url or "")
            if not changes:
                return None
            contradiction = _contradicted_fix(current, changes)
            if contradiction is not None:
                if not override:
                    raise contradiction
                changes.append(
                    {"field": "override", "from": None, "to": contradiction.override_label}
                )
            if status in (Status.FIXED, Status.IGNORED):
                # A regression is answered by a new decision: fixed again, or ignored.
                current.regression = False
            current.triaged_at = timezone.now()
            current.save(
                update_fields=[f for f, v in requested.items() if v is not UNSET]
                + ["regression", "triaged_at"]
            )
            event = TriageEvent.objects.create(
                item=current,
                actor=user,
                kind=TriageEvent.CHANGE,
                changes=changes,
                at=current.triaged_at,
            )
        self.refresh_from_db(fields=TRIAGE_FIELDS)
        return event

    def seen_in(self, build: Build) -> bool:
        """Record that the item occurred in `build`: widen first/last seen, and reopen the item
        as a regression when it was marked fixed in an earlier build (release order). Returns
        whether it was reopened. Call it for new occurrences as they arrive."""
        if build.app_id != self.app_id:
            raise ValueError("the build belongs to another app")
        with transaction.atomic():
            current = (
                type(self)
                .objects.select_for_update(of=("self",))  # the builds may be null: the item only
                .select_related("first_seen_build", "last_seen_build", "fixed_in_build")
                .get(Q(app_id=self.app_id), pk=self.pk)
            )
            fields: list[str] = []
            first, last = current.first_seen_build, current.last_seen_build
            if first is None or build.release_key < first.release_key:
                current.first_seen_build = build
                fields.append("first_seen_build")
            if last is None or build.release_key > last.release_key:
                current.last_seen_build = build
                fields.append("last_seen_build")
            reopened = current.status == Status.FIXED and is_later_build(
                build, current.fixed_in_build
            )
            if reopened:
                current.status = Status.OPEN
                current.regression = True
                fields += ["status", "regression"]
                TriageEvent.objects.create(
                    item=current,
                    actor=None,
                    kind=TriageEvent.REGRESSION,
                    changes=[
                        {"field": "status", "from": Status.FIXED.value, "to": Status.OPEN.value},
                        {"field": "regression", "from": None, "to": f"seen in {build}"},
                    ],
                )
            if fields:
                current.save(update_fields=fields)
        self.refresh_from_db(fields=TRIAGE_FIELDS)
        return reopened


def _contradicted_fix(
    item: Triaged, changes: list[dict[str, str | None]]
) -> ContradictedFix | None:
    """When the changes set "fixed in" (the build, or the status fixed with a build) and that
    build still has occurrences of the item: the refusal to raise (or the override to record)."""
    changed = {change["field"] for change in changes}
    claims_fix = "fixed_in_build" in changed or (
        "status" in changed and item.status == Status.FIXED
    )
    build = item.fixed_in_build
    if not claims_fix or build is None:
        return None
    occurrences = item.occurrences_in(build)
    return ContradictedFix(build, occurrences) if occurrences else None


class TriageEvent(models.Model):
    """One change of an item's triage, by a user or by memdash itself (actor null)."""

    CHANGE, REGRESSION = "change", "regression"
    KINDS = [(CHANGE, "changed"), (REGRESSION, "reopened as a regression")]

    content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE)
    object_id = models.PositiveBigIntegerField()
    item = GenericForeignKey("content_type", "object_id")
    at = models.DateTimeField(default=timezone.now)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    kind = models.CharField(max_length=16, choices=KINDS, default=CHANGE)
    # [{"field": "status", "from": "new", "to": "open"}, ...] with display values, so the history
    # still reads right after a user or build is deleted.
    changes = models.JSONField(default=list)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["content_type", "object_id", "at"])]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} at {self.at:%Y-%m-%d %H:%M}"


class TrackerSettings(models.Model):
    """An app's issue tracker: the address of its "new issue" page with `{title}` and `{body}`
    (and `{build}`, `{count}`, `{url}`) where the item's values go, URL-encoded: GitHub's
    `https://github.com/o/r/issues/new?title={title}&body={body}`, GitLab's
    `…/-/issues/new?issue[title]={title}&issue[description]={body}`, Jira's
    `…/secure/CreateIssueDetails!init.jspa?pid=10000&issuetype=1&summary={title}&description={body}`."""

    app = models.OneToOneField("core.App", on_delete=models.CASCADE, related_name="tracker")
    new_issue_url = models.CharField(max_length=2000, blank=True, default="")


class TrackedIssue(models.Model):
    """The tracker's issue about a triaged item, as its URL (recorded in the triage)."""

    content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE)
    object_id = models.PositiveBigIntegerField()
    item = GenericForeignKey("content_type", "object_id")
    url = models.URLField(max_length=2000)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["content_type", "object_id"], name="triage_one_tracked_issue"
            )
        ]

    @classmethod
    def record(cls, item: Triaged, url: str) -> list[dict[str, str | None]]:
        """Record (or clear, with '') the item's tracker issue; the change, if any, for its
        history."""
        where = {
            "content_type": ContentType.objects.get_for_model(type(item)),
            "object_id": item.pk,
        }
        old = cls.objects.filter(**where).values_list("url", flat=True).first() or ""
        if old == url:
            return []
        if url:
            cls.objects.update_or_create(**where, defaults={"url": url})
        else:
            cls.objects.filter(**where).delete()
        return [{"field": "tracker_url", "from": old or None, "to": url or None}]
