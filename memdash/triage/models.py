"""Triage shared by every kind of grouped problem (retain-cycle clusters, leak groups).

A domain's group model inherits `Triaged` and has an `app` foreign key to `core.App`; the
services in `memdash.triage.writes` do the rest (history, assignee check, regressions).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Self

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey, GenericRelation
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.utils import timezone

if TYPE_CHECKING:
    from memdash.core.models import App


class Status(models.TextChoices):
    NEW = "new", "new"
    OPEN = "open", "open"
    FIXED = "fixed", "fixed"
    IGNORED = "ignored", "ignored"


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
