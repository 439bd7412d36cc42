"""Demo retain cycles: clustered cycles across the five demo builds, one cluster regressing.

- ChatViewController ↔ ChatDataSource (the bad link, seen as two different loops): builds 1–2,
  marked fixed in build 3, seen again in build 4 → reopened as a regression.
- VoiceNotePlayer ↔ VoiceNoteCell through a timer: every build, open, assigned.
- ProfileHeaderView ↔ AvatarLoader through a block: from build 3 on, new.
- SettingsViewController ↔ SettingsObserver: builds 1–2, fixed in build 3 for good.
- A UIKit-only cycle on every build (a system cluster, hidden by default).
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import TYPE_CHECKING

from memdash.core.writes.apps import add_member
from memdash.cycles.logic.parse import Cycle, ParsedCycles
from memdash.cycles.models import Cluster
from memdash.cycles.writes import store_cycle_report
from memdash.triage.models import Status

if TYPE_CHECKING:
    from memdash.core.demo import DemoContext
    from memdash.core.models import App

BLOCK = "__NSMallocBlock__"

CHAT = (
    (("ChatViewController", ()), ("ChatDataSource", ("_dataSource",)), (BLOCK, ("_onUpdate",))),
)
CHAT_INPUT = (
    ("ChatInputBar", ("_inputBar",)),
    ("ChatViewController", ("_delegate",)),
    ("ChatDataSource", ("_dataSource",)),
    (BLOCK, ("_onUpdate",)),
)
TIMER = (
    ("VoiceNotePlayer", ("_player",)),
    ("__NSCFTimer", ("_timer",)),
    ("VoiceNoteCell", ("_target",)),
)
PROFILE = (
    (BLOCK, ()),
    ("ProfileHeaderView", ("_observer",)),
    ("AvatarLoader", ("_avatarLoader",)),
    (BLOCK, ("_completion",)),
)
SETTINGS = (
    ("SettingsViewController", ("_settingsViewController",)),
    ("SettingsObserver", ("_observer",)),
)
UIKIT = (
    ("UITransitionView", ("_containerView",)),
    ("_UIFullscreenPresentationController", ("__presentationControllerToNotifyOnLayoutSubviews",)),
)


def _cycles_for(build_index: int, rng: random.Random) -> list[Cycle]:
    cycles: list[Cycle] = [TIMER, UIKIT]
    if build_index in (0, 1, 3, 4):  # gone in build 3 (the fix), back from build 4
        cycles += [CHAT[0]] * rng.randint(1, 2) + [CHAT_INPUT] * rng.randint(0, 1)
    if build_index >= 2:
        cycles.append(PROFILE)
    if build_index in (0, 1):
        cycles.append(SETTINGS)
    return cycles


def _store_build(ctx: DemoContext, index: int) -> None:
    build = ctx.builds[index]
    for device_number, device in enumerate(ctx.devices):
        if ctx.rng.random() < 0.25:
            continue  # not every device reports on every build
        cycles = _cycles_for(index, ctx.rng)
        dropped = 1 if ctx.rng.random() < 0.3 else 0  # a transient (null) cycle now and then
        captured_at = ctx.build_date(build) + timedelta(hours=2 + device_number)
        store_cycle_report(
            ctx.app,
            build,
            device,
            captured_at,
            ParsedCycles(cycles=list(cycles), dropped=dropped),
            source_format="memdash.retain-cycles",
        )


def _cluster_with(app: App, cls: str) -> Cluster:
    return next(c for c in Cluster.objects.filter(app=app, is_current=True) if cls in c.key)


def load(ctx: DemoContext) -> None:
    if not ctx.app.membership_set.filter(user=ctx.user).exists():
        add_member(ctx.app, ctx.user)  # the assignee must be a member
    for index in (0, 1, 2):
        _store_build(ctx, index)
    fix_build = ctx.builds[2]
    chat = _cluster_with(ctx.app, "ChatViewController")
    chat.change_triage(
        ctx.user,
        status=Status.FIXED,
        assignee=ctx.user,
        fixed_in_build=fix_build,
        notes="ChatDataSource's _onUpdate block captured the controller strongly; weakified.",
    )
    settings_cluster = _cluster_with(ctx.app, "SettingsObserver")
    settings_cluster.change_triage(ctx.user, status=Status.FIXED, fixed_in_build=fix_build)
    timer = _cluster_with(ctx.app, "VoiceNotePlayer")
    timer.change_triage(
        ctx.user,
        status=Status.OPEN,
        assignee=ctx.user,
        notes="NSTimer retains its target; switch to a block-based timer with a weak self.",
    )
    for index in range(3, len(ctx.builds)):
        _store_build(ctx, index)
    # Make sure the regression shows whatever the random device sample: one report of the chat
    # loop from the first device on build 4.
    store_cycle_report(
        ctx.app,
        ctx.builds[3],
        ctx.devices[0],
        ctx.build_date(ctx.builds[3]) + timedelta(hours=1),
        ParsedCycles(cycles=[CHAT[0]], dropped=0),
        source_format="memdash.retain-cycles",
    )
