"""Background work of leaks: renaming stored stacks after debug files arrive, and regrouping the
leaks of groups made by older fingerprint rules.

`memdash.symbols` sends `debug_files_stored` once an upload of debug files is committed; the
receiver (connected in apps.py) queues `rename_leak_frames`, which names the frames of the
app's leak records in those modules and regroups the leaks (memdash.leaks.writes.names).

After a `migrate` that applied leaks migrations (one marks the groups of older rules whenever
the rules change, as 0004 does), `regroup_after_migrate` queues `regroup_leaks` for each app
that has such groups (memdash.leaks.writes.regroup; `manage.py regroup_leaks` does the same
here and now). Until then the lists show those groups as they were.
"""

from __future__ import annotations

import logging
from typing import Any

from django.apps import AppConfig
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations import Migration
from django.db.migrations.executor import MigrationExecutor
from django.tasks import task

from memdash.core.models import App
from memdash.leaks.reads import apps_with_older_groups
from memdash.leaks.writes.names import rename_leaks
from memdash.leaks.writes.regroup import regroup_old_rules
from memdash.symbols.models import SymbolicationJob

log = logging.getLogger(__name__)


@task()
def rename_leak_frames(app_id: int, debug_ids: list[str]) -> int:
    """Answers how many records' stacks were renamed."""
    app = App.objects.get(pk=app_id)
    result = rename_leaks(app, debug_ids)
    if result.records:
        log.info(
            "leaks of %s renamed: %d records, %d moved, %d groups re-keyed, %d merged",
            app.bundle_id, result.records, result.moved, result.groups_rekeyed,
            result.groups_merged,
        )  # fmt: skip
    return result.records


def debug_files_stored(sender: type, app: App, job: SymbolicationJob, **kwargs: Any) -> None:
    """The receiver of `memdash.symbols.signals.debug_files_stored`."""
    rename_leak_frames.enqueue(app.pk, list(job.debug_ids))


@task()
def regroup_leaks(app_id: int) -> int:
    """Regroup the app's groups made by older rules; answers how many records were regrouped."""
    app = App.objects.get(pk=app_id)
    result = regroup_old_rules(app)
    if result.records or result.groups_rekeyed or result.groups_merged:
        log.info(
            "leaks of %s regrouped: %d records, %d moved, %d groups re-keyed, %d merged",
            app.bundle_id, result.records, result.moved, result.groups_rekeyed,
            result.groups_merged,
        )  # fmt: skip
    return result.records


def regroup_after_migrate(
    sender: AppConfig,
    plan: list[tuple[Migration, bool]] | None = None,
    using: str = DEFAULT_DB_ALIAS,
    **kwargs: Any,
) -> None:
    """The receiver of `post_migrate` for this app: after a migrate that applied leaks
    migrations forwards and left every migration applied (else the tables may not match the
    models yet), queue the regrouping of each app with groups made by older rules."""
    if not plan or any(backwards for _, backwards in plan):
        return
    if not any(migration.app_label == "leaks" for migration, _ in plan):
        return
    executor = MigrationExecutor(connections[using])
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        return
    for app_id in apps_with_older_groups(using):
        regroup_leaks.enqueue(app_id)
