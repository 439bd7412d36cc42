"""Real receivers on loopback for the alerts' deliveries: an HTTP server that records what it is
sent (answering with the statuses it is told to, in turn) and an SMTP server (aiosmtpd)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.controller import Controller
from aiosmtpd.handlers import Message


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class HttpReceiver:
    statuses: list[int] = field(default_factory=list)  # answered in turn; then 200
    received: list[Received] = field(default_factory=list)
    url: str = ""


@contextmanager
def http_receiver(*statuses: int) -> Iterator[HttpReceiver]:
    receiver = HttpReceiver(statuses=list(statuses))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            receiver.received.append(Received(self.path, dict(self.headers.items()), body))
            status = receiver.statuses.pop(0) if receiver.statuses else 200
            self.send_response(status)
            self.end_headers()
            self.wfile.write(b"ok" if status == 200 else b"receiver is down")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


class Inbox(Message):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list = []

    def handle_message(self, message) -> None:  # type: ignore[no-untyped-def]
        self.messages.append(message)


@contextmanager
def smtp_receiver() -> Iterator[tuple[int, Inbox]]:
    inbox = Inbox()
    with socket.socket() as probe:  # a free port (aiosmtpd connects to it to see it is up)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port, inbox
    finally:
        controller.stop()
