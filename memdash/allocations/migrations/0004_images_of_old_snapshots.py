"""The images of snapshots stored before memdash kept them (migration 0002), derived from what
is stored: the frames on each snapshot's call tree carry their image's name, whether it is a
system image and whether they have a name. Each image gets its row with its unnamed frames and
the bytes allocated through them (as `symbolicate.image_usage` counts them at ingest), and the
snapshot its unnamed bytes, so its missing debug files are listed. The image's id (UUID or build
id) is not among what is stored: ingest's migration 0002 reads it back from the kept upload, so
that a debug file arriving now finds these snapshots.

Self-contained (as `image_usage` is at the time of this migration), over historical models.
"""

from collections import defaultdict

from django.db import migrations

CHUNK = 2000


def frames_of(frame_model, ids):
    ids = list(ids)
    found = {}
    for start in range(0, len(ids), CHUNK):
        for fid, symbol, image, system in frame_model.objects.filter(
            id__in=ids[start : start + CHUNK]
        ).values_list("id", "symbol", "image", "is_system"):
            found[fid] = (symbol, image, system)
    return found


def usage(nodes, frames):
    """(per image name: [frames without a name, bytes through them, system]; unnamed bytes)."""
    images = {}
    for symbol, image, system in frames.values():
        if image:
            entry = images.setdefault(image, [0, 0, False])
            entry[2] = entry[2] or system
    for fid, (symbol, image, _) in frames.items():
        if image and not symbol:
            images[image][0] += 1
    children = defaultdict(list)
    for node_id, (parent, _, _) in nodes.items():
        children[parent if parent in nodes else None].append(node_id)
    total = 0
    pending = [(root, frozenset()) for root in children[None]]
    while pending:
        node_id, above = pending.pop()
        _, frame_id, own_bytes = nodes[node_id]
        symbol, image, _ = frames.get(frame_id, ("", "", False))
        if image and not symbol:
            above = above | {image}
        if above and own_bytes:
            total += own_bytes
            for name in above:
                images[name][1] += own_bytes
        pending += [(child, above) for child in children[node_id]]
    return images, total


def derive_images(apps, schema_editor):
    snapshot_model = apps.get_model("allocations", "Snapshot")
    image_model = apps.get_model("allocations", "SnapshotImage")
    node_model = apps.get_model("allocations", "CallTreeNode")
    frame_model = apps.get_model("allocations", "Frame")
    recorded = image_model.objects.values("snapshot_id")
    for snapshot in snapshot_model.objects.exclude(pk__in=recorded).only("id", "app_id"):
        nodes = {
            node_id: (parent, frame, pb + tb)
            for node_id, parent, frame, pb, tb in node_model.objects.filter(
                snapshot_id=snapshot.pk
            ).values_list(
                "node_id", "parent_id", "frame_id", "self_persistent_bytes", "self_transient_bytes"
            )
        }
        frames = frames_of(frame_model, {frame for _, frame, _ in nodes.values()})
        images, unnamed = usage(nodes, frames)
        image_model.objects.bulk_create(
            [
                image_model(
                    snapshot_id=snapshot.pk, app_id=snapshot.app_id, name=name, system=system,
                    unsymbolicated_frames=count, unsymbolicated_bytes=nbytes,
                )  # fmt: skip
                for name, (count, nbytes, system) in sorted(images.items())
            ],
            batch_size=500,
        )
        snapshot_model.objects.filter(pk=snapshot.pk).update(unsymbolicated_bytes=unnamed)


class Migration(migrations.Migration):
    dependencies = [
        ("allocations", "0003_categorytotal_responsible_frame"),
    ]

    operations = [
        migrations.RunPython(derive_images, migrations.RunPython.noop, elidable=True),
    ]
