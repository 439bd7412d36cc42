"""Canonical retain cycles and their clusters (retain-cycles-v1, algorithm `cycles-2026.11`).

Pure functions over plain data (no Django). One bad link A→B can close several loops
(A-B-C-D, A-B-C-E); each loop is reported from whichever object the detector started at, on
many devices. To make one bad link one task:

- a cycle's identity is its canonical rotation (the smallest rotation of its (class, via) pairs);
- its key is the sequence of its app classes in loop order, smallest rotation;
- its cluster is the shortest key, among the keys present, contained in its own key as a cyclic
  subsequence, ties to the smallest key.

A cycle with no app class (a system cycle) cannot be fixed by the app's engineers; it is keyed on
all its classes instead and clustered only among system cycles, so it never joins, nor swallows,
an app cluster.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

ALGORITHM_VERSION = "cycles-2026.11"

Link = tuple[str, tuple[str, ...]]  # (class, via): via is the reference path into this object
Cycle = tuple[Link, ...]


class CycleKey(NamedTuple):
    """What a cycle is clustered on: app classes (or, for a system cycle, all classes)."""

    classes: tuple[str, ...]
    system: bool


def smallest_rotation_index[T](items: Sequence[T]) -> int:
    """Where the rotation that compares smallest starts (the first such place).
    (Loops are short — the detector stops at 10 objects — so trying every rotation is fine.)"""
    n = len(items)
    return min(range(n), key=lambda i: tuple(items[i:]) + tuple(items[:i])) if n else 0


def rotate[T](items: Sequence[T], start: int) -> tuple[T, ...]:
    return tuple(items[start:]) + tuple(items[:start])


def smallest_rotation[T](items: Sequence[T]) -> tuple[T, ...]:
    """The rotation that compares smallest; the same whatever element the sequence starts at."""
    return rotate(items, smallest_rotation_index(items))


def canonical_cycle(cycle: Sequence[Link]) -> Cycle:
    """The rotation of the (class, via) pairs that is smallest. Each pair moves as one: `via`
    is the reference into its object, from the object before it in the loop."""
    return smallest_rotation([(cls, tuple(via)) for cls, via in cycle])


def canonical_with_ownership(
    cycle: Sequence[Link], ownership: Sequence[str]
) -> tuple[Cycle, tuple[str, ...]]:
    """The canonical rotation, and the ownership of each reference (`ownership[i]` is that of the
    reference into `cycle[i]`) rotated with it. Ownership is no part of a loop's identity: the
    same loop reported by a tool that knows it (Xcode's `leaks`) and by one that does not
    (FBRetainCycleDetector, whose references are all strong) is one loop."""
    links = [(cls, tuple(via)) for cls, via in cycle]
    start = smallest_rotation_index(links)
    owned = list(ownership) + [""] * (len(links) - len(ownership))
    return rotate(links, start), rotate(owned[: len(links)], start)


def merged_ownership(stored: Sequence[str], new: Sequence[str]) -> list[str]:
    """What is known of each reference's ownership after another report of the loop: a known
    word fills an unknown one ("" is unknown), a later known word wins."""
    length = max(len(stored), len(new))
    old = list(stored) + [""] * (length - len(stored))
    return [new[i] if i < len(new) and new[i] else old[i] for i in range(length)]


def is_system_class(name: str, system_prefixes: Iterable[str]) -> bool:
    return any(name.startswith(prefix) for prefix in system_prefixes if prefix)


def app_classes(cycle: Sequence[Link], system_prefixes: Sequence[str]) -> list[str]:
    return [cls for cls, _via in cycle if not is_system_class(cls, system_prefixes)]


def key_of_cycle(cycle: Sequence[Link], system_prefixes: Sequence[str]) -> CycleKey:
    """App classes in loop order, smallest rotation; all classes for a system cycle."""
    classes = app_classes(cycle, system_prefixes)
    if classes:
        return CycleKey(smallest_rotation(classes), system=False)
    return CycleKey(smallest_rotation([cls for cls, _via in cycle]), system=True)


def is_subsequence(small: Sequence[str], big: Sequence[str]) -> bool:
    position = 0
    for item in big:
        if position < len(small) and item == small[position]:
            position += 1
    return position == len(small)


def is_cyclic_subsequence(member: Sequence[str], container: Sequence[str]) -> bool:
    """Whether `member`'s classes appear in `container` in the same cyclic order: some rotation
    of `container` starting at `member`'s first class has `member` as a subsequence."""
    if not member:
        return True
    if len(member) > len(container):
        return False
    first = member[0]
    for start, cls in enumerate(container):
        if cls == first:
            rotated = tuple(container[start:]) + tuple(container[:start])
            if is_subsequence(member, rotated):
                return True
    return False


def key_contains(container: CycleKey, member: CycleKey) -> bool:
    """App keys and system keys never contain one another."""
    return container.system == member.system and is_cyclic_subsequence(
        member.classes, container.classes
    )


def _order(key: CycleKey) -> tuple[int, tuple[str, ...]]:
    """Shortest first, then the smallest list of class names."""
    return len(key.classes), key.classes


def assign_clusters(keys: Iterable[CycleKey]) -> dict[CycleKey, CycleKey]:
    """Each distinct key → the key of its cluster. Depends only on the set of keys.

    A cluster key is its own cluster (a shorter key inside it would also be inside every key that
    contains it), so the values are exactly the minimal keys to list."""
    distinct = sorted(set(keys), key=_order)
    # A contained key's smallest rotation starts with its smallest class, which must occur in the
    # container: index keys by that class so each key is checked against few candidates.
    by_first_class: dict[tuple[bool, str], list[CycleKey]] = defaultdict(list)
    for key in distinct:  # already in (length, classes) order, so each list is too
        if key.classes:
            by_first_class[(key.system, key.classes[0])].append(key)
    assignment: dict[CycleKey, CycleKey] = {}
    for key in distinct:
        assignment[key] = key
        # Candidates shortest and smallest first; the first contained one is the cluster.
        lists = [by_first_class.get((key.system, cls), []) for cls in sorted(set(key.classes))]
        for candidate in heapq.merge(*lists, key=_order):
            if len(candidate.classes) > len(key.classes):
                break
            if key_contains(key, candidate):
                assignment[key] = candidate
                break
    return assignment


def _digest(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def cycle_digest(canonical: Sequence[Link]) -> str:
    """Identity of a canonical loop, for storage."""
    return _digest([[cls, list(via)] for cls, via in canonical])


def key_digest(classes: Sequence[str]) -> str:
    return _digest(list(classes))


def cycle_from_json(value: Sequence[Sequence[Any]]) -> Cycle:
    """A stored canonical form ([[class, [via, ...]], ...]) back as a tuple of links."""
    return tuple((cls, tuple(via)) for cls, via in value)


def cycle_to_json(cycle: Sequence[Link]) -> list[list[str | list[str]]]:
    return [[cls, list(via)] for cls, via in cycle]


# --- the link to weaken ------------------------------------------------------------------------

Reference = tuple[str, tuple[str, ...], str]  # (holder class, via, held class): one strong ref
# Reference names that usually point back up to an owner: the one to make weak.
BACK_REFERENCE_WORDS = ("delegate", "target", "parent", "owner", "controller")
# Ownerships (as Xcode's memory graph names them) of references that retain nothing: a loop
# through one of them keeps nothing alive by itself, and such a reference is weak already.
NON_RETAINING = frozenset({"weak", "unsafe_unretained", "unowned"})


def retains(ownership: Sequence[str]) -> bool:
    """Whether every reference of a loop may retain (unknown ownership counts as strong)."""
    return not any(own in NON_RETAINING for own in ownership)


class WeakLink(NamedTuple):
    """The reference of a loop to make weak: the arrow into `loop[position]`, and why."""

    position: int
    reference: Reference
    reason: str


def references(loop: Sequence[Link]) -> list[Reference]:
    """The loop's strong references: the i-th is the one into loop[i], from loop[i - 1]."""
    return [(loop[i - 1][0], tuple(via), cls) for i, (cls, via) in enumerate(loop)]


def _is_block(name: str) -> bool:
    return "Block" in name  # __NSMallocBlock__, __NSStackBlock__, __NSGlobalBlock__


def _kind(reference: Reference, system_prefixes: Sequence[str]) -> tuple[int, str]:
    """How likely the reference is the one to weaken (higher first), and why."""
    holder, via, held = reference
    if is_system_class(held, system_prefixes):
        return 0, f"a reference into the system class {held}"
    if _is_block(holder):
        return 3, f"a block holds {held} strongly: capture it weakly"
    name = (via[-1] if via else "").lstrip("_").lower()
    if any(word in name for word in BACK_REFERENCE_WORDS) or held.endswith("Controller"):
        return 2, f"a reference back to {held}, which usually owns {holder}"
    return 1, f"a strong reference into the app class {held}"


def link_to_weaken(
    loop: Sequence[Link],
    loops: Sequence[Sequence[Link]],
    system_prefixes: Sequence[str],
    ownership: Sequence[str] = (),
) -> WeakLink | None:
    """The reference of `loop` (a cluster's minimal loop) to make weak, given all the cluster's
    loops that retain (`retains`): a block's capture of an app object first, then a
    back-reference (a delegate, a target, a reference up to a controller), then any reference
    into an app class; among equals, one that every loop of the cluster goes through (weakening
    it breaks them all), then the first in loop order. None for an empty loop, and for a loop
    with a reference that retains nothing (`ownership`, aligned with `loop`): its weak reference
    is never offered, nor is any other, since such a loop keeps nothing alive by itself."""
    if not retains(ownership):
        return None
    found = references(loop)
    every = set(found)
    for other in loops:
        every &= set(references(other))
    best: tuple[int, int] | None = None  # (-rank, index)
    for index, reference in enumerate(found):
        rank = 2 * _kind(reference, system_prefixes)[0] + (reference in every)
        if best is None or (-rank, index) < best:
            best = (-rank, index)
    if best is None:
        return None
    index = best[1]
    reasons = [_kind(found[index], system_prefixes)[1]]
    if len(loops) > 1 and found[index] in every:
        reasons.insert(0, f"all {len(loops)} loops of this cluster go through it")
    return WeakLink(index, found[index], "; ".join(reasons))


def marked(
    loop: Sequence[Link], reference: Reference | None
) -> list[tuple[str, tuple[str, ...], bool]]:
    """The loop's (class, via) pairs, each with whether the reference into it is `reference`."""
    return [
        (cls, via, ref == reference) for (cls, via), ref in zip(loop, references(loop), strict=True)
    ]


CHOSEN_REASON = "chosen by a member"


def links_to_offer(
    loop: Sequence[Link], ownership: Sequence[str], computed: WeakLink | None
) -> list[WeakLink]:
    """The references of `loop` a member may choose to weaken: the computed one first, then the
    loop's other strong references in loop order. A reference that retains nothing (`__weak`
    …) is never offered; nor is any when the loop has one (it keeps nothing alive by itself)."""
    if computed is None or not retains(ownership):
        return []
    others = [
        WeakLink(index, reference, "another strong reference of the loop")
        for index, reference in enumerate(references(loop))
        if index != computed.position
    ]
    return [computed, *others]


def chosen_link(offered: Sequence[WeakLink], choice: Reference | None) -> WeakLink | None:
    """The link to weaken as shown: the member's `choice` when the loop still offers it, else
    the computed one (the first offered), else None."""
    for link in offered:
        if choice is not None and link.reference == choice:
            if link is offered[0]:
                return link  # the member agreed with the computed one: its reason stands
            return link._replace(reason=CHOSEN_REASON)
    return offered[0] if offered else None


def reference_from_json(value: Any) -> Reference | None:
    """A stored reference ([holder, [via, ...], held]) as a Reference; None when it is not one."""
    if not isinstance(value, list) or len(value) != 3:
        return None
    holder, via, held = value
    if not (isinstance(holder, str) and isinstance(held, str) and isinstance(via, list)):
        return None
    if not all(isinstance(name, str) for name in via):
        return None
    return (holder, tuple(via), held)


def reference_text(reference: Reference) -> str:
    """`Holder._via → Held`, as the history and the form show a reference."""
    holder, via, held = reference
    return f"{holder}.{'.'.join(via) or '(unnamed)'} → {held}"
