"""What a reference's ownership (as Xcode's leaks says it) changes: never the loop's identity, and
a reference that retains nothing is never offered as the link to weaken."""

from __future__ import annotations

import pytest

from memdash.cycles.logic.clustering import (
    NON_RETAINING,
    canonical_cycle,
    canonical_with_ownership,
    link_to_weaken,
    merged_ownership,
    retains,
)
from memdash.cycles.logic.drawing import draw_loop
from memdash.cycles.models import DEFAULT_SYSTEM_PREFIXES, CanonicalCycle
from memdash.cycles.reads.clusters import MemberCycle
from tests.migrations import migrate

BLOCK = "__NSMallocBlock__"
# ChatViewController → _dataSource → ChatDataSource → _delegate (weak) → back
WEAK_LOOP = (("ChatViewController", ("_delegate",)), ("ChatDataSource", ("_dataSource",)))
BLOCK_LOOP = (
    ("ChatViewController", ("self",)),
    ("ChatDataSource", ("_dataSource",)),
    (BLOCK, ("_onUpdate",)),
)


def test_ownership_rotates_with_the_canonical_loop_and_is_no_part_of_it():
    rotated = (("ChatDataSource", ("_dataSource",)), ("ChatViewController", ("_delegate",)))
    canon, ownership = canonical_with_ownership(rotated, ("strong", "weak"))
    assert canon == canonical_cycle(WEAK_LOOP) == canonical_cycle(rotated)
    assert dict(zip([cls for cls, _via in canon], ownership, strict=True)) == {
        "ChatDataSource": "strong",
        "ChatViewController": "weak",
    }
    # a tool that says nothing (FBRetainCycleDetector): unknown, the same loop
    assert canonical_with_ownership(rotated, ())[1] == ("", "")


def test_what_is_known_of_ownership_grows_and_a_later_word_wins():
    assert merged_ownership([], ["strong", ""]) == ["strong", ""]
    assert merged_ownership(["strong", ""], ["", "weak"]) == ["strong", "weak"]
    assert merged_ownership(["strong", "weak"], ["", ""]) == ["strong", "weak"]


def test_a_loop_through_a_weak_reference_is_never_asked_to_weaken():
    canon, ownership = canonical_with_ownership(WEAK_LOOP, ("weak", "strong"))
    assert not retains(ownership) and {"weak", "unowned"} <= NON_RETAINING
    assert link_to_weaken(canon, [canon], DEFAULT_SYSTEM_PREFIXES, ownership) is None
    # the same loop with ownership unknown (as FBRetainCycleDetector reports every loop)
    offered = link_to_weaken(canon, [canon], DEFAULT_SYSTEM_PREFIXES, ("", ""))
    assert offered is not None


def test_a_retaining_loop_offers_the_blocks_capture():
    canon, ownership = canonical_with_ownership(BLOCK_LOOP, ("strong", "strong", "strong"))
    weak = link_to_weaken(canon, [canon], DEFAULT_SYSTEM_PREFIXES, ownership)
    assert weak is not None
    holder, via, held = weak.reference
    assert (holder, via, held) == (BLOCK, ("self",), "ChatViewController")


def test_the_drawing_marks_references_that_retain_nothing():
    drawing = draw_loop(WEAK_LOOP, lambda cls: False, None, ("weak", "strong"), NON_RETAINING)
    assert [(a.ownership, a.retains) for a in drawing.arrows] == [("weak", False), ("strong", True)]
    assert all(
        a.retains and a.ownership == "" for a in draw_loop(WEAK_LOOP, lambda c: False).arrows
    )


@pytest.mark.slow  # migrations back and forth
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest")
def test_the_migration_gives_stored_loops_an_unknown_ownership():
    """cycles 0005: loops stored before it say nothing of their references' ownership."""
    old = migrate(
        [("cycles", "0004_report_one_per_upload"), ("core", "0003_member_role_invitations")]
    )
    app = old.get_model("core", "App").objects.create(bundle_id="com.example.mig", platform="ios")
    old.get_model("cycles", "CanonicalCycle").objects.create(
        app=app, canonical=[["A", ["_b"]], ["B", ["_a"]]], digest="d", key=["A", "B"], length=2
    )
    migrate([("cycles", "0005_canonical_cycle_ownership")])
    loop = CanonicalCycle.objects.get(digest="d")
    assert loop.ownership == []
    assert MemberCycle(loop, 1, 1, 1).ownership == ["", ""]
    assert MemberCycle(loop, 1, 1, 1).retains
