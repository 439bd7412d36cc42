"""Reads of MetricKit's diagnostics: how many of each kind per build, the latest, and one with
its call-stack tree named by the app's debug files (the same lookups that name every other
frame: memdash.symbols), answered when a page shows it, so a debug file uploaded later names
what came before it."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count

from memdash.core.models import App, Build
from memdash.core.reads.apps import builds_in_release_order
from memdash.foom.logic.diagnostics import KIND_LABELS, Frame, binaries
from memdash.foom.models import MetricKitDiagnostic
from memdash.symbols import reads as symbols

LATEST = 50
MAX_INDENT = 40


@dataclass
class DiagnosticCounts:
    """A build's diagnostics, per kind (KIND_LABELS order)."""

    build: Build
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def cells(self) -> list[int]:
        return [self.counts.get(kind, 0) for kind in KIND_LABELS]


def diagnostic_counts(app: App) -> list[DiagnosticCounts]:
    """Per build (in release order) that has any, its diagnostics of each kind: one grouped
    count over the app's diagnostics (an index on app, build and kind)."""
    grouped = (
        MetricKitDiagnostic.objects.filter(app=app)
        .values_list("build_id", "kind")
        .annotate(n=Count("id"))
        .order_by()
    )
    by_build: dict[int, dict[str, int]] = {}
    for build_id, kind, n in grouped:
        by_build.setdefault(build_id, {})[kind] = n
    return [
        DiagnosticCounts(build, by_build[build.pk])
        for build in builds_in_release_order(app)
        if build.pk in by_build
    ]


def latest_diagnostics(app: App, limit: int = LATEST) -> list[MetricKitDiagnostic]:
    """The app's latest diagnostics, without their call stacks."""
    return list(
        MetricKitDiagnostic.objects.filter(app=app)
        .select_related("build")
        .defer("stacks")
        .order_by("-begins_at", "-id")[:limit]
    )


def diagnostic_of(app: App, pk: int) -> MetricKitDiagnostic:
    """Raises MetricKitDiagnostic.DoesNotExist for another app's or no diagnostic."""
    return MetricKitDiagnostic.objects.select_related("build").get(app=app, pk=pk)


@dataclass(frozen=True)
class NamedFrame:
    """A line of a call stack: the function a debug file names (an inlined call is a line of
    its own, one level deeper), else the binary and offset."""

    depth: int
    label: str
    binary: str
    offset: int
    samples: int
    named: bool
    inlined: bool = False
    file: str = ""
    line: int | None = None

    @property
    def indent(self) -> int:
        """Characters of indentation: one a level, at most MAX_INDENT (a phone shows the rest)."""
        return min(self.depth, MAX_INDENT)


@dataclass
class NamedStack:
    attributed: bool
    frames: list[NamedFrame]


def named_stacks(app: App, diagnostic: MetricKitDiagnostic) -> list[NamedStack]:
    """The diagnostic's call stacks as sent (root frames first, each followed by its
    sub-frames, depth first), named where the app has the debug file of a frame's binary."""
    stacks = diagnostic.stacks
    resolve = symbols.symbolicator(app, binaries([s["frames"] for s in stacks]))
    named = []
    for stack in stacks:
        lines: list[NamedFrame] = []
        pending: list[tuple[Frame, int]] = [(f, 0) for f in reversed(stack["frames"])]
        while pending:
            (uuid, offset, samples, binary, subs), depth = pending.pop()
            places = list(resolve(uuid, offset)) if uuid and resolve else []
            if diagnostic.per_thread:  # innermost first: an inlined call before its caller
                places.reverse()
            for i, place in enumerate(places):
                lines.append(
                    NamedFrame(depth + i, place.function, place.image or binary, offset, samples,
                               True, place.inlined, place.file, place.line)
                )  # fmt: skip
            if not places:
                label = f"{binary or uuid or '(unknown binary)'} + {offset:#x}"
                lines.append(NamedFrame(depth, label, binary, offset, samples, False))
            below = depth + max(len(places), 1)
            pending.extend((sub, below) for sub in reversed(subs))
        named.append(NamedStack(stack["attributed"], lines))
    return named
