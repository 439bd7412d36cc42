"""The apps of memdash, floor by floor, and what each lens brings to the site: declared once here.

The settings install the apps from `APPS`; the site serves each lens's URLs (its `urls.py`),
draws its pages by kind (`pages`, for `core.links`), puts it in the app's navigation (`nav`)
and runs its demo parts in order (`demo`); `tests/architecture/` reads the floors from here and
checks that `.importlinter`'s lists (which cannot read Python) say the same. Plain data, no
Django: the settings read it before Django starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Lens:
    """A lens (floor 3) as the site sees it."""

    name: str  # its package under memdash/, its app label and its URL namespace
    # (URL name, label) of its pages in the app's navigation bar, in order
    nav: tuple[tuple[str, str], ...] = ()
    # Entries after every lens's own: pages about the app's files rather than a view of its data
    nav_end: tuple[tuple[str, str], ...] = ()
    # Which of its pages draws each kind that pages on other floors link to (`core.links`)
    pages: dict[str, str] = field(default_factory=dict)
    # Its demo parts (`demo.py`: `load` named after the app, or `PARTS`), and the top floor's
    # that build on its data, in the order they load
    demo: tuple[str, ...] = ()


LENSES: tuple[Lens, ...] = (
    Lens(
        "snapshots",
        nav=(("snapshots:app_detail", "Builds"),),
        nav_end=(("snapshots:debug_files", "Debug files"),),
        pages={
            "app": "snapshots:app_detail",
            "build": "snapshots:build_detail",
            "snapshot": "snapshots:snapshot_detail",
            "snapshot_calltree": "snapshots:calltree",
            "allocations": "snapshots:allocations",
            "build_allocations": "snapshots:build_allocations",
        },
    ),
    Lens(
        "compare",
        nav=(("compare:trends", "Trends"), ("compare:build_compare", "Compare")),
        pages={
            "generation_diff": "compare:generation_diff",
            "snapshot_diff": "compare:snapshot_diff",
            "build_compare": "compare:build_compare",
        },
    ),
    Lens(
        "foom",
        nav=(("foom:app_foom", "FOOM"),),
        pages={
            "build_foom": "foom:build_foom",
            "session": "foom:session_by_id",  # by the uploaded session id a snapshot names
        },
        demo=("foom", "os exits"),  # ingest's: MetricKit from the FOOM runs; the Android variant
    ),
    Lens(
        "cycles",
        nav=(("cycles:cluster_list", "Retain cycles"),),
        pages={"cycle_cluster": "cycles:cluster_detail"},  # a leaks report's ROOT CYCLE links here
        demo=("cycles",),
    ),
    Lens(
        "leaks",
        nav=(("leaks:group_list", "Leaks"),),
        # ingest's: Xcode's leaks joins the cycles' clusters; LeakCanary; an exit-info
        demo=("leaks", "leak tools"),
    ),
    Lens("churn", nav=(("churn:app_churn", "Churn"),), demo=("churn",)),
)

# The floors, lowest first; an import, a `{% url %}` name or a `reverse` only goes down a floor
# or stays in its app (symbols is a floor of its own between core and the shared data).
FLOORS: tuple[tuple[float, tuple[str, ...]], ...] = (
    (1, ("core",)),
    (1.5, ("symbols",)),  # debug files and symbol lookups, used by allocations and above
    (2, ("allocations", "triage", "alerts")),  # shared data and components
    (3, tuple(lens.name for lens in LENSES)),
    (4, ("ingest", "site")),  # the doors and the site, siblings that never import each other
)
APPS: tuple[str, ...] = tuple(app for _, apps in FLOORS for app in apps)
FLOOR_OF: dict[str, float] = {app: floor for floor, apps in FLOORS for app in apps}

# The top floor's own: the navigation after the lenses', the pages it draws, its demo parts
# before the lenses' (the snapshots' data, and the Matrix report and debug files that name it).
TOP_NAV: tuple[tuple[str, str], ...] = (
    ("alerts:app_alerts", "Alerts"),  # floor 2's, after the lenses whose figures it watches
    ("ingest:upload_list", "Uploads"),
    ("site:app_settings", "Settings"),
)
TOP_PAGES: dict[str, str] = {
    "uploads": "ingest:upload_list",
    "all_uploads": "ingest:all_uploads",
    "app_settings": "site:app_settings",
}
DEMO_BEFORE_LENSES: tuple[str, ...] = ("allocations", "matrix report", "debug files")
# The tracker's link on clusters and leaks; alerts, on what the others stored.
DEMO_AFTER_LENSES: tuple[str, ...] = ("triage", "alerts")


def app_nav() -> list[tuple[str, str]]:
    """The app's navigation bar: every lens's pages, then their ends, then the top floor's."""
    return [
        *(entry for lens in LENSES for entry in lens.nav),
        *(entry for lens in LENSES for entry in lens.nav_end),
        *TOP_NAV,
    ]


def pages() -> dict[str, str]:
    """Which URL draws each kind of page that pages link to (`core.links`)."""
    return {kind: url for lens in LENSES for kind, url in lens.pages.items()} | TOP_PAGES


def demo_order() -> list[str]:
    """The demo parts in the order they load."""
    return [
        *DEMO_BEFORE_LENSES, *(part for lens in LENSES for part in lens.demo), *DEMO_AFTER_LENSES,
    ]  # fmt: skip
