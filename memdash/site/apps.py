from django.apps import AppConfig

from memdash.core import links
from memdash.core.web import gates

# Which page draws each kind of thing that pages on lower floors link to (`core.links`).
PAGES = {
    "app": "snapshots:app_detail",
    "build": "snapshots:build_detail",
    "snapshot": "snapshots:snapshot_detail",
    "snapshot_calltree": "snapshots:calltree",
    "generation_diff": "compare:generation_diff",
    "snapshot_diff": "compare:snapshot_diff",
    "build_compare": "compare:build_compare",
    "build_foom": "foom:build_foom",
    "session": "foom:session_by_id",  # by the uploaded session id a snapshot names
    "uploads": "ingest:upload_list",
    "all_uploads": "ingest:all_uploads",
    "app_settings": "site:app_settings",
    "cycle_cluster": "cycles:cluster_detail",  # a leaks report's ROOT CYCLE links to its cluster
}
APP_NAV = [
    ("snapshots:app_detail", "Builds"),
    ("compare:trends", "Trends"),
    ("compare:build_compare", "Compare"),
    ("foom:app_foom", "FOOM"),
    ("cycles:cluster_list", "Retain cycles"),
    ("leaks:group_list", "Leaks"),
    ("churn:app_churn", "Churn"),
    ("alerts:app_alerts", "Alerts"),
    ("snapshots:debug_files", "Debug files"),
    ("ingest:upload_list", "Uploads"),
    ("site:app_settings", "Settings"),
]


class SiteConfig(AppConfig):
    """Floor 4: the root URLs, the navigation, the app settings page, the demo and the CI gate."""

    name = "memdash.site"
    label = "site"

    def ready(self) -> None:
        from memdash.alerts.logic.kinds import add_checker
        from memdash.foom.web import exits as exit_views
        from memdash.site.web import alert_checks as checks

        for kind, url_name in PAGES.items():
            links.serve(kind, url_name)
        for url_name, label in APP_NAV:
            links.add_to_app_nav(url_name, label)
        # The CI gate over HTTP (compare) also judges the FOOM lens's OS-reported rate.
        gates.add_check(exit_views.GATE_PARAMETER, exit_views.os_rate_gate)
        # How each kind of alert rule is judged, by the lens that owns its figures.
        add_checker("foom_rate", checks.foom_rate)
        add_checker("os_kill_rate", checks.os_kill_rate)
        add_checker("category_growth", checks.category_growth, checks.check_growth_figures)
        add_checker("new_problem", checks.new_problem)
        add_checker("churn", checks.churn_growth)
