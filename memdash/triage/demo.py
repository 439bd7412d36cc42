"""The demo's issue tracker: the chat app files its memory bugs on GitHub, so every retain-cycle
cluster and leak offers a prefilled "new issue" link there."""

from __future__ import annotations

from memdash.core.demo import DemoContext
from memdash.triage.writes import set_tracker_template

NEW_ISSUE = "https://github.com/example/chat/issues/new?title={title}&body={body}&labels=memory"


def load(ctx: DemoContext) -> None:
    set_tracker_template(ctx.app, NEW_ISSUE)
