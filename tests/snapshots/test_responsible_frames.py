"""The responsible caller of each listed stack, read outward only past system frames
(`allocations.reads.stacks.responsible_frame_ids`): hand-made stack trees whose answers are read
off the picture below, including a run of system frames deeper than one read's level."""

from __future__ import annotations

import pytest

from memdash.allocations.models import Frame, StackNode
from memdash.allocations.reads.stacks import responsible_frame_ids
from memdash.core.models import App

pytestmark = pytest.mark.django_db

# Frames: 1 main (app), 2 -[Chat load] (app), 10..14 libsystem frames.
# Stack nodes (node: frame, parent):
#   100: main                          root
#   101: -[Chat load]     <- 100
#   102: malloc (10)      <- 101       stack 102's caller: -[Chat load] (one level out)
#   103: sys 11 <- 104: sys 12 <- 105: sys 13 <- 106: sys 14 <- 101: four system frames deep,
#        stack 103's caller: -[Chat load]
#   200: sys 10 (root) <- 201: sys 11  only system frames: no caller
#   300: main as a leaf of its own     its own frame
APP_FRAMES = {1: "main", 2: "-[Chat load]"}
SYSTEM_FRAMES = {10: "malloc", 11: "calloc", 12: "_malloc_zone", 13: "szone", 14: "nano"}
NODES = {
    100: (1, None), 101: (2, 100), 102: (10, 101), 106: (14, 101), 105: (13, 106),
    104: (12, 105), 103: (11, 104), 200: (10, None), 201: (11, 200), 300: (1, None),
}  # fmt: skip


@pytest.fixture
def tree(app):
    frames = [Frame(id=i, app=app, symbol=s, image="App") for i, s in APP_FRAMES.items()]
    frames += [
        Frame(id=i, app=app, symbol=s, image="libsystem_malloc.dylib", is_system=True)
        for i, s in SYSTEM_FRAMES.items()
    ]
    Frame.objects.bulk_create(frames)
    StackNode.objects.bulk_create(
        StackNode(id=node, app=app, frame_id=frame, parent_id=parent, depth=0)
        for node, (frame, parent) in NODES.items()
    )
    return app


def test_each_stack_gets_the_first_app_frame_outward(tree):
    found = responsible_frame_ids(tree.pk, [102, 103, 201, 300])
    assert {stack: found.get(stack) for stack in (102, 103, 201, 300)} == {
        102: 2, 103: 2, 201: None, 300: 1,
    }  # fmt: skip


def test_another_apps_stacks_are_not_read(tree):
    other = App.objects.create(name="Other", bundle_id="com.example.other", platform="ios")
    assert responsible_frame_ids(other.pk, [102, 103]) == {}
