import random, time
import pytest
from memdash.snapshots.services import store_snapshot_document
from memdash.ingest.formats import UploadMeta
from django.utils import timezone
from tests.calltree.conftest import tree_doc
pytestmark = pytest.mark.django_db

def test_perf(app, api_client):
    rng = random.Random(3)
    doc = tree_doc()
    nframes = 20000
    doc["images"] = [{"name": "Chat"}, {"name": "UIKitCore", "system": True}]
    doc["frames"] = [{"symbol": f"f{i}", "image": 1 if i % 4 == 0 else 0} for i in range(nframes)]
    stacks = []
    for i in range(200000):
        parent = None if i < 50 else rng.randrange(max(0, i - 3000), i)
        stacks.append([parent, rng.randrange(nframes)])
    doc["stacks"] = stacks
    doc["allocations"] = [
        {"category": f"C{rng.randrange(300)}", "stack": rng.randrange(200000), "thread": rng.randrange(2),
         "generation": rng.randrange(2), "persistent": 1, "persistent_bytes": rng.randrange(16, 5000)}
        for _ in range(150000)
    ]
    from memdash.core.uploads import UploadMeta as UM
    import dataclasses
    fields = {f.name for f in dataclasses.fields(UM)}
    meta = UM(**{k: v for k, v in dict(app=app, received_at=timezone.now(), build_version="1", build_number="1",
              build_commit="", device_id="", device_model="", os="", session="", upload_id=None).items() if k in fields})
    t = time.time(); res = store_snapshot_document(doc, meta); print("ingest", time.time() - t)
    sid = res.object_id
    import cProfile, pstats
    from memdash.snapshots import calltree_selectors as cs
    from memdash.snapshots.models import Snapshot
    snap = Snapshot.objects.get(pk=sid)
    pr = cProfile.Profile(); pr.enable()
    cs.snapshot_call_tree(snap, cs.CallTreeQuery(inverted=True))
    pr.disable(); pstats.Stats(pr).sort_stats("cumulative").print_stats(25)
    return
    for params in [{"expand": "heaviest"}, {"expand": "heaviest"}, {"inverted": "1", "expand": "heaviest"}, {"inverted": "1", "expand": "heaviest"},
                   {"hide_system": "1", "expand": "heaviest"}, {"hide_system": "1", "expand": "heaviest"}, {"category": "C5", "expand": "heaviest"}, {"thread": "1", "inverted": "1"}]:
        t = time.time(); r = api_client.get(f"/api/v1/snapshots/{sid}/calltree", params); d = time.time() - t
        print(params, r.status_code, f"{d:.2f}s", len(r.json().get("heaviest", [])), r.json()["total"])
