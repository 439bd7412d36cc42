"""What a call tree is asked for: category, lifespan, generation, the Instruments options, data
mining and the time range; its cache token and its form as a job carries it."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any

from memdash.allocations.logic.calltree.mining import Rule
from memdash.allocations.logic.calltree.per_snapshot import MEDIAN
from memdash.allocations.logic.calltree.tree import TreeOptions


@dataclass(frozen=True)
class CallTreeQuery:
    category: str = ""  # a category name; "" for all categories
    lifespan: str = "all"
    generation: int | str | None = None  # an index, BASELINE, or None for all
    inverted: bool = False
    hide_system: bool = False
    by_thread: bool = False
    flatten_recursion: bool = False
    charge: tuple[str, ...] = ()  # libraries (image names) charged to their callers
    search: str = ""  # "Involves symbol": only the stacks through a frame whose label has it
    focus: str = ""  # a node id: its subtree as the tree (`calltree_transform.focus_tree`)
    # Data mining (`calltree_mining`): symbols and libraries charged, pruned, removed; nodes
    # under the minimums merged. Applied to the tree built without them (`_mined`).
    rules: tuple[Rule, ...] = ()
    min_bytes: int = 0
    min_count: int = 0
    # A build's tree: its snapshots' median per node, or their sum (`per_snapshot`); a
    # snapshot's tree is the same either way (not part of its cache key).
    aggregate: str = MEDIAN
    # only what a snapshot made in a time range: (column, first, last), `timeline.TimeRange.span`
    time_range: tuple[str, int, int] | None = None

    @property
    def options(self) -> TreeOptions:
        return TreeOptions(
            inverted=self.inverted,
            hide_system=self.hide_system,
            by_thread=self.by_thread,
            flatten_recursion=self.flatten_recursion,
            charge=self.charge,
            search=self.search,
        )

    @property
    def is_default(self) -> bool:
        """The tree precomputed at ingest (any lifespan: it keeps all four counters)."""
        plain = not self.category and self.generation is None and self.time_range is None
        return plain and self.options == TreeOptions()

    @property
    def mines(self) -> bool:
        return bool(self.rules) or self.min_bytes > 0 or self.min_count > 0

    def unmined(self) -> CallTreeQuery:
        """The query of the tree its data mining applies to: without it, not focused, and with
        rules not inverted (they work on the merged tree; the result is inverted after)."""
        return dataclasses.replace(
            self, rules=(), min_bytes=0, min_count=0, focus="",
            inverted=self.inverted and not self.rules,
        )  # fmt: skip

    @classmethod
    def from_json(cls, fields: dict[str, Any]) -> CallTreeQuery:
        """A query from its fields as a job carries them (`tree_job`: lists for tuples)."""
        return cls(**{
            **fields,
            "charge": tuple(fields.get("charge") or ()),
            "rules": tuple(Rule(*rule) for rule in fields.get("rules") or ()),
            "time_range": tuple(fields["time_range"]) if fields.get("time_range") else None,
        })  # fmt: skip

    def cache_token(self) -> str:
        mining = (self.rules, self.min_bytes, self.min_count) if self.mines else ()
        span = None if self.time_range is None else tuple(self.time_range)
        text = repr((self.category, self.lifespan, self.generation, self.options, span, *mining))
        return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()
