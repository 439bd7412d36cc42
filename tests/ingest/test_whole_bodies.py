"""Whole bodies only: a body shorter than its Content-Length (the connection closed early) and a
chunked body without a length are refused with their reason and never processed.

The requests go over a real socket to the live server, as a device's would: the test client
cannot send fewer bytes than it declares.
"""

from __future__ import annotations

import json
import socket
from urllib.parse import urlsplit

import orjson
import pytest

from memdash.allocations.models import Snapshot
from memdash.ingest.models import Upload
from tests.samples import spec_example


def send_raw(url: str, head: str, body: bytes, close_early: bool = False) -> tuple[int, dict]:
    """Send a request as bytes; `close_early` shuts the sending side after `body` (fewer bytes
    than the head may declare). Returns the status and the JSON answer."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=20) as conn:
        conn.sendall(head.encode() + body)
        if close_early:
            conn.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    _, _, payload = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), json.loads(payload or b"{}")


def head(secret: str, extra: str) -> str:
    return (
        "POST /api/v1/uploads HTTP/1.1\r\nHost: localhost\r\n"
        f"Authorization: Bearer {secret}\r\nContent-Type: application/json\r\n"
        f"{extra}Connection: close\r\n\r\n"
    )


@pytest.mark.django_db(transaction=True)
def test_a_body_shorter_than_its_length_is_refused_and_not_stored(live_server, ingest_secret):
    body = orjson.dumps(spec_example())
    half = body[: len(body) // 2]
    status, answer = send_raw(
        live_server.url, head(ingest_secret, f"Content-Length: {len(body)}\r\n"), half, True
    )
    assert status == 400
    assert answer["path"] == "Content-Length"
    assert f"after {len(half)} of the {len(body)} bytes" in answer["error"]
    assert Snapshot.objects.count() == 0
    assert list(Upload.objects.values_list("status", flat=True)) == [Upload.REJECTED]

    # The client's retry with the whole body is stored once.
    status, answer = send_raw(
        live_server.url, head(ingest_secret, f"Content-Length: {len(body)}\r\n"), body
    )
    assert status == 202 and answer["status"] == Upload.DONE
    assert Snapshot.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_chunked_body_without_a_length_is_411_not_an_empty_upload(live_server, ingest_secret):
    body = orjson.dumps(spec_example())
    chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    status, answer = send_raw(
        live_server.url, head(ingest_secret, "Transfer-Encoding: chunked\r\n"), chunked
    )
    assert status == 411
    assert answer["path"] == "Content-Length"
    assert "Content-Length" in answer["error"]
    assert Snapshot.objects.count() == 0
    assert list(Upload.objects.values_list("status", flat=True)) == [Upload.REJECTED]
