"""Writes of a build's statistics tables made ahead (`models.BuildView`).

`refresh_build_views` reads the build's per-snapshot category totals once, makes the table of
the whole build and of each value of each filter under each lifespan filter
(`logic.build_views`), and replaces the build's stored tables (one upsert). The task that
runs it is queued once a snapshot's transaction commits, batched (`tasks.queue_build_views`):
a burst of uploads to one build makes them once.
"""

from __future__ import annotations

import zlib

import orjson
from django.utils import timezone

from memdash.allocations.logic.analysis import LIFESPANS
from memdash.allocations.logic.build_views import build_table, filter_keys
from memdash.allocations.models import BuildView
from memdash.allocations.reads.build_views import build_columns, build_snapshot_list
from memdash.core.models import Build


def refresh_build_views(build: Build) -> int:
    """Make and store every table of the build (whole, per filter value, per lifespan); the
    number stored. Each is stored with the signature of the snapshots it was made from, read
    before their totals (a snapshot stored meanwhile is left out, and queues another).

    One upsert of them all (no transaction of its own, so the embedded default adds none to an
    upload's path), then the tables of filter values no snapshot has any longer dropped."""
    snapshots = build_snapshot_list(build)
    keys = filter_keys(snapshots.attributes)
    keys_signatures = snapshots.signatures(keys)
    columns = build_columns(build, snapshots)
    made_at = timezone.now()
    views = []
    # A filter value that keeps the same snapshots as another (every snapshot of a build from
    # one OS, or a build of one snapshot) has the same table: made once, stored under each.
    made: dict[tuple[bytes, str], tuple[int, bytes]] = {}
    for (name, value), chosen in keys.items():
        for lifespan in LIFESPANS:
            same = (chosen.tobytes(), lifespan)
            if same not in made:
                table = build_table(columns, chosen, lifespan)
                made[same] = (table["snapshots"], zlib.compress(orjson.dumps(table), 1))
            count, data = made[same]
            views.append(
                BuildView(
                    app_id=build.app_id,
                    build=build,
                    filter=name,
                    value=value[:128],
                    lifespan=lifespan,
                    snapshots=count,
                    signature=keys_signatures[(name, value)],
                    data=data,
                    made_at=made_at,
                )
            )
    BuildView.objects.bulk_create(
        views,
        update_conflicts=True,
        unique_fields=["app", "build", "filter", "value", "lifespan"],
        update_fields=["snapshots", "signature", "data", "made_at"],
    )
    gone = BuildView.objects.filter(app_id=build.app_id, build=build, made_at__lt=made_at)
    if gone.exists():
        gone.delete()
    return len(views)
