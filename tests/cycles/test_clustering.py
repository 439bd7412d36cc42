"""Canonical rotation, keys and clustering, with cases worked out by hand (retain-cycles-v1)."""

import random
from pathlib import Path

from memdash.cycles.logic.clustering import (
    ALGORITHM_VERSION,
    CycleKey,
    assign_clusters,
    canonical_cycle,
    is_cyclic_subsequence,
    key_of_cycle,
)
from memdash.cycles.logic.parse import parse_printed_cycles

PREFIXES = [
    "NS",
    "__NS",
    "UI",
    "_UI",
    "CA",
    "CF",
    "__CF",
    "OS_",
    "WK",
    "_WK",
    "NSKVO",
    "Swift.",
    "_Tt",
]
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "cycles" / "nslog_cycles.txt"


def loop(*classes):
    """A cycle of classes with made-up reference names (the key ignores them)."""
    return tuple((cls, (f"_{cls.lower()}",)) for cls in classes)


def app_key(*classes):
    return CycleKey(tuple(classes), system=False)


def test_algorithm_version():
    assert ALGORITHM_VERSION == "cycles-2026.11"


def test_canonical_rotation_ignores_the_starting_object():
    a, b, c = ("A", ("_c",)), ("B", ("_a",)), ("C", ("_b",))
    # The three rotations of one loop have one canonical form, starting at the smallest pair.
    assert canonical_cycle([a, b, c]) == canonical_cycle([b, c, a]) == canonical_cycle([c, a, b])
    assert canonical_cycle([c, a, b]) == (a, b, c)


def test_canonical_rotation_keeps_via_with_its_object_and_compares_it():
    # Same classes, different references: a different loop; with equal classes the via decides.
    first = [("X", ("_b",)), ("X", ("_a",))]
    assert canonical_cycle(first) == (("X", ("_a",)), ("X", ("_b",)))
    assert canonical_cycle([("X", ("_a",)), ("X", ("_c",))]) != canonical_cycle(first)


def test_key_drops_system_classes_and_via_and_rotates():
    cycle = (
        ("ChatInputBar", ("_inputBar",)),
        ("ChatViewController", ("_delegate",)),
        ("ChatDataSource", ("_dataSource",)),
        ("__NSMallocBlock__", ("_onUpdate",)),
    )
    # App classes in loop order: ChatInputBar, ChatViewController, ChatDataSource;
    # smallest rotation starts at "ChatDataSource" ("ChatD" < "ChatI" < "ChatV").
    assert key_of_cycle(cycle, PREFIXES) == app_key(
        "ChatDataSource", "ChatInputBar", "ChatViewController"
    )


def test_system_cycle_is_keyed_on_all_its_classes():
    key = key_of_cycle(loop("_UIFullscreenPresentationController", "UITransitionView"), PREFIXES)
    # "U" (0x55) < "_" (0x5F): the rotation starts at UITransitionView.
    assert key == CycleKey(("UITransitionView", "_UIFullscreenPresentationController"), system=True)


def test_prefix_list_decides_what_is_system():
    cycle = loop("MDCache", "Owner")
    assert key_of_cycle(cycle, PREFIXES) == app_key("MDCache", "Owner")
    assert key_of_cycle(cycle, [*PREFIXES, "MD"]) == app_key("Owner")


def test_cyclic_subsequence():
    assert is_cyclic_subsequence(("A", "B"), ("A", "C", "B", "D"))
    assert is_cyclic_subsequence(("B", "D"), ("A", "B", "C", "D"))
    # D then A wraps around the end of the loop: still the same cyclic order.
    assert is_cyclic_subsequence(("A", "D"), ("B", "C", "D", "A"))
    # In a 3-loop A,B,C every pair is in cyclic order: rotated to C,A,B it has C then B.
    assert is_cyclic_subsequence(("C", "B"), ("A", "B", "C"))
    # In the 4-loop A,B,C,D the order A, C, B is not: from A, B comes before C.
    assert not is_cyclic_subsequence(("A", "C", "B"), ("A", "B", "C", "D"))
    assert not is_cyclic_subsequence(("A", "E"), ("A", "B", "C", "D"))


def test_two_cycles_sharing_a_bad_link_land_in_one_cluster():
    # One bad link A->B closes the loops A-B-C-D and A-B-C-E, and the minimal loop A-B is also seen.
    keys = [app_key("A", "B"), app_key("A", "B", "C", "D"), app_key("A", "B", "C", "E")]
    clusters = assign_clusters(keys)
    assert set(clusters.values()) == {app_key("A", "B")}


def test_sample_chat_cycles_share_one_cluster():
    parsed = parse_printed_cycles(SAMPLE.read_bytes())
    keys = [key_of_cycle(canonical_cycle(c), PREFIXES) for c in parsed.cycles]
    clusters = assign_clusters(keys)
    chat = app_key("ChatDataSource", "ChatViewController")
    chat_input = app_key("ChatDataSource", "ChatInputBar", "ChatViewController")
    # (ChatDataSource, ChatViewController) is a cyclic subsequence of the input-bar loop.
    assert clusters[chat] == chat and clusters[chat_input] == chat
    # Four clusters: chat, timer, profile block, and the UIKit-only one kept apart.
    assert sorted(set(clusters.values())) == sorted(
        [
            chat,
            app_key("AvatarLoader", "ProfileHeaderView"),
            app_key("VoiceNoteCell", "VoiceNotePlayer"),
            CycleKey(("UITransitionView", "_UIFullscreenPresentationController"), system=True),
        ]
    )


def test_problems_that_merely_share_a_class_are_not_merged():
    # A-B and A-C share class A but neither key is inside the other: two clusters.
    clusters = assign_clusters([app_key("A", "B"), app_key("A", "C")])
    assert clusters == {
        app_key("A", "B"): app_key("A", "B"),
        app_key("A", "C"): app_key("A", "C"),
    }


def test_a_loop_containing_two_minimal_keys_goes_to_the_smallest():
    # A-B-C contains A-B and (cyclically) A-C, both of length 2: the tie goes to ["A","B"].
    clusters = assign_clusters([app_key("A", "B"), app_key("A", "C"), app_key("A", "B", "C")])
    assert clusters[app_key("A", "B", "C")] == app_key("A", "B")
    assert clusters[app_key("A", "C")] == app_key("A", "C")


def test_shorter_key_wins_over_a_smaller_longer_one():
    # A-B-C-D contains both A-B-C (len 3) and C-D (len 2): the shortest wins though "A" < "C".
    clusters = assign_clusters(
        [app_key("A", "B", "C"), app_key("C", "D"), app_key("A", "B", "C", "D")]
    )
    assert clusters[app_key("A", "B", "C", "D")] == app_key("C", "D")


def test_system_only_cycle_stays_apart():
    system = CycleKey(("UIView", "UIViewController"), system=True)
    clusters = assign_clusters(
        [app_key("UIView"), system, app_key("UIView", "UIViewController", "X")]
    )
    # An app key made of the same names (as with another app's prefix list) does not absorb it.
    assert clusters[system] == system
    assert clusters[app_key("UIView", "UIViewController", "X")] == app_key("UIView")


def test_shuffled_input_gives_the_same_clusters():
    keys = [
        app_key("A", "B"), app_key("A", "B", "C", "D"), app_key("A", "C"), app_key("A", "B", "C"),
        app_key("C", "D"), app_key("B", "D", "E"), app_key("D", "E"), app_key("A", "E", "D"),
        CycleKey(("NSObject", "UIView"), system=True), CycleKey(("UIView",), system=True),
    ]  # fmt: skip
    expected = assign_clusters(keys)
    rng = random.Random(6)
    for _ in range(20):
        shuffled = keys + keys[:3]  # duplicates (the same key from many devices) change nothing
        rng.shuffle(shuffled)
        assert assign_clusters(shuffled) == expected
    # Worked by hand: A-B-C-D contains C-D, A-B (len 2): C-D? and A-B: tie -> ["A","B"] < ["C","D"].
    assert expected[app_key("A", "B", "C", "D")] == app_key("A", "B")
    # B-D-E contains D-E (len 2) -> D-E.  A-E-D contains D-E? rotate at D: D,A,E: D then E yes.
    assert expected[app_key("B", "D", "E")] == app_key("D", "E")
    assert expected[app_key("A", "E", "D")] == app_key("D", "E")
    assert expected[CycleKey(("NSObject", "UIView"), system=True)] == CycleKey(
        ("UIView",), system=True
    )
