import pytest

DOC = {
  "format": "memdash.snapshot", "version": 1,
  "app": {"id": "com.example.chat", "platform": "ios"},
  "build": {"version": "8.0.51", "number": "2741", "commit": "9f1c2e0"},
  "device": {"id": "A1B2", "model": "iPhone14,5", "os": "iOS 17.4.1"},
  "session": "5f0c3e1a",
  "captured_at": "2026-11-20T10:12:03+00:00",
  "images": [{"name": "Chat", "uuid": "6A1F", "load_address": "0x100000000"},
             {"name": "UIKitCore", "system": True}],
  "frames": ["main", {"symbol": "UIApplicationMain", "image": 1},
             "-[ChatViewController viewDidLoad]", "-[MessageCell initWithStyle:]"],
  "stacks": [[None, 0], [0, 1], [1, 2], [2, 3]],
  "threads": ["main"],
  "generations": [{"name": "Launch", "at_ms": 0}, {"name": "Open chat", "at_ms": 5320}],
  "allocations": [
    {"category": "MessageCell", "stack": 3, "thread": 0, "generation": 1,
     "persistent": 12, "persistent_bytes": 9216, "transient": 30, "transient_bytes": 23040},
    {"category": "Malloc 48 Bytes", "stack": 2, "generation": 0,
     "persistent": 100, "persistent_bytes": 4800}
  ]
}

def test_smoke(upload, api_client):
    r = upload(DOC)
    print(r.status_code, r.json())
    assert r.status_code == 202
    sid = r.json()["snapshot"]["id"]
    s = api_client.get(f"/api/v1/snapshots/{sid}/statistics").json()
    print(s)
    assert s["summary"][0]["persistent_bytes"] == 14016
