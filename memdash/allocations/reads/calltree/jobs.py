"""Call trees too large to build in a request: built by a task, their progress in the cache.
So are their flame graphs and Top Functions (a job with a `product`: made of the tree by the
task, and kept in the cache under a key of their own).

A request may build the trees it reads from at most `MEMDASH_TREE_INLINE_ROWS` allocation rows
(the `row_count` of the snapshots each tree is built from: its `InlineBudget`); a tree that is
not in the cache yet and would go past it is not built but named in `TreeDeferred` (as a
`TreeJob`). The views hand those jobs to `tasks.read_or_queue`, which queues one task per tree
(two requests for the same tree queue one: `claim`) and answers 202 with the job's state until
the task has put the tree in the cache under the key the request looked for.

The state of a job is a cache entry beside the tree's, `{state, progress, error}`: queued,
running (progress 0..1, written by the task as it goes), done, or failed (kept a minute, then a
request queues the tree again). A state without news for `STATE_SECONDS` (a worker that died)
expires, and the next request queues the tree again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import cache

Json = dict[str, Any]
QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
STATES = (QUEUED, RUNNING, DONE, FAILED)
STATE_SECONDS = 30 * 60  # a queued or running job without news for this long is taken for dead
FAILED_SECONDS = 60  # a failure is shown this long, then the tree may be asked for again
RETRY_AFTER = 1  # seconds a client waits before asking again


@dataclass(frozen=True)
class TreeJob:
    """One tree to build: where it goes (`key`, the tree's cache key) and what to build it from
    (`kind` "snapshot" or "build", the object's id, the query's fields, a build's snapshot
    filters). `rows`: the allocation rows it reads. Plain data: it is the task's argument."""

    key: str
    kind: str
    object_id: int
    query: Json
    filters: dict[str, str] = field(default_factory=dict)
    rows: int = 0
    whole: bool = False  # a snapshot's stored tree built whole (a flame graph, Top Functions)
    # What is made of the tree and kept under `key` instead of the tree itself (a flame graph,
    # Top Functions: `logic.calltree.products.TreeProduct.as_json`); empty for the tree.
    product: Json = field(default_factory=dict)

    def as_json(self) -> Json:
        return {
            "key": self.key,
            "kind": self.kind,
            "object_id": self.object_id,
            "query": self.query,
            "filters": self.filters,
            "rows": self.rows,
            "whole": self.whole,
            "product": self.product,
        }

    @classmethod
    def from_json(cls, data: Json) -> TreeJob:
        return cls(
            str(data["key"]),
            str(data["kind"]),
            int(data["object_id"]),
            dict(data["query"]),
            dict(data.get("filters") or {}),
            int(data.get("rows") or 0),
            bool(data.get("whole")),
            dict(data.get("product") or {}),
        )


@dataclass(frozen=True)
class TreeState:
    state: str
    progress: float = 0.0
    error: str = ""

    @property
    def http_status(self) -> int:
        """202 while the tree is built, 500 when building it failed."""
        return 500 if self.state == FAILED else 202

    def headers(self, url: str = "") -> dict[str, str]:
        """Retry-After while building, and the status URL (the request's own: asked again, it
        answers the tree once it is built) as Location."""
        if self.state == FAILED:
            return {}
        return {"Retry-After": str(RETRY_AFTER), **({"Location": url} if url else {})}

    def as_json(self, url: str = "") -> Json:
        data: Json = {"state": self.state, "progress": round(self.progress, 3)}
        if url:
            data["url"] = url
        if self.state == FAILED:
            data["error"] = f"the call tree could not be built: {self.error}"
        else:
            data["retry_after"] = RETRY_AFTER
        return data


class TreeDeferred(Exception):
    """The trees a request would build past its budget: to be built by tasks."""

    def __init__(self, jobs: list[TreeJob]) -> None:
        super().__init__(f"{len(jobs)} call trees to build")
        self.jobs = jobs


class TreeComputing(Exception):
    """The trees a request needs are being built (or failed): answer with `state`."""

    def __init__(self, state: TreeState) -> None:
        super().__init__(state.state)
        self.state = state


class Deferrals:
    """The trees several reads defer, raised together once all have run (so that one request
    queues every tree it needs, not one at a time)."""

    def __init__(self) -> None:
        self.jobs: list[TreeJob] = []

    def read[**P, T](self, read: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
        """What `read` returns; None when it deferred trees (kept for `check`)."""
        try:
            return read(*args, **kwargs)
        except TreeDeferred as exc:
            self.jobs.extend(exc.jobs)
            return None

    def check(self) -> None:
        if self.jobs:
            raise TreeDeferred(self.jobs)


class InlineBudget:
    """The allocation rows one request may read to build trees itself (None: no limit)."""

    def __init__(self, rows: int | None = None) -> None:
        self.left = rows if rows is not None else settings.MEMDASH_TREE_INLINE_ROWS

    def take(self, rows: int) -> bool:
        """Whether a tree built from `rows` rows is built now (and counted); else it is a job."""
        if self.left is None:
            return True
        if rows > self.left:
            return False
        self.left -= rows
        return True


def _state_key(key: str) -> str:
    return f"{key}:job"


def read_state(key: str) -> TreeState | None:
    data = cache.get(_state_key(key))
    if not isinstance(data, dict) or data.get("state") not in STATES:
        return None
    return TreeState(str(data["state"]), float(data.get("progress", 0)), str(data.get("error", "")))


def write_state(key: str, state: str, progress: float = 0.0, error: str = "") -> None:
    data = {"state": state, "progress": max(0.0, min(1.0, progress)), "error": error}
    seconds = FAILED_SECONDS if state == FAILED else STATE_SECONDS
    cache.set(_state_key(key), data, seconds)


def claim(job: TreeJob) -> bool:
    """Mark the job queued unless another request did (an atomic add): True when this caller
    must queue it."""
    queued = {"state": QUEUED, "progress": 0.0, "error": ""}
    return bool(cache.add(_state_key(job.key), queued, STATE_SECONDS))


def forget(job: TreeJob) -> None:
    """Drop a job's state (done, but its tree is no longer in the cache: build it again)."""
    cache.delete(_state_key(job.key))


def overall(states: Iterable[TreeState]) -> TreeState:
    """The state of several trees at once: failed if one failed, done when all are; else
    running if one runs, queued otherwise, the progress their mean."""
    states = list(states)
    failed = [s for s in states if s.state == FAILED]
    if failed:
        return failed[0]
    if all(s.state == DONE for s in states):
        return TreeState(DONE, 1.0)
    progress = sum(s.progress for s in states) / len(states)
    running = any(s.state in (RUNNING, DONE) for s in states)
    return TreeState(RUNNING if running else QUEUED, progress)
