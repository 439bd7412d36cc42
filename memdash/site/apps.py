from typing import Any

from django.apps import AppConfig, apps
from django.db import connections, transaction
from django.db.models.signals import post_migrate

from memdash import floors
from memdash.core import links
from memdash.core.web import gates
from memdash.site.writes.citus import distribute

# Which page draws each kind of thing that pages on lower floors link to (`core.links`), and
# the app's navigation bar: each lens says its own in `memdash.floors.LENSES`.
PAGES = floors.pages()
APP_NAV = floors.app_nav()


class SiteConfig(AppConfig):
    """Floor 4: the root URLs, the navigation, the app settings page, the demo and the CI gate."""

    name = "memdash.site"
    label = "site"

    def ready(self) -> None:
        from memdash.alerts.logic.kinds import add_checker
        from memdash.foom.web import gate as exit_gate
        from memdash.site.web import alert_checks as checks

        for kind, url_name in PAGES.items():
            links.serve(kind, url_name)
        for url_name, label in APP_NAV:
            links.add_to_app_nav(url_name, label)
        # The CI gate over HTTP (compare) also judges the FOOM lens's OS-reported rate.
        gates.add_check(exit_gate.GATE_PARAMETER, exit_gate.os_rate_gate)
        # How each kind of alert rule is judged, by the lens that owns its figures.
        add_checker("foom_rate", checks.foom_rate)
        add_checker("os_kill_rate", checks.os_kill_rate)
        add_checker("category_growth", checks.category_growth, checks.check_growth_figures)
        add_checker("new_problem", checks.new_problem)
        add_checker("churn", checks.churn_growth)
        post_migrate.connect(place_new_tables_on_citus, dispatch_uid="memdash-citus")


def place_new_tables_on_citus(sender: AppConfig, using: str = "default", **kwargs: Any) -> None:
    """After a `migrate` (once: for the last app Django signals), place on Citus the tables
    that migrations after `site/0001` made (`writes.citus.distribute`; nothing elsewhere)."""
    last = [config for config in apps.get_app_configs() if config.models_module][-1]
    if sender is last:
        with transaction.atomic(using=using):
            distribute(connections[using])
