"""One app run as an upload reports it (sessions-v1), checked and typed. Pure: no Django.

The ingest parser builds these from the JSON; `foom.writes.sessions` stores them. Keeping the type
here lets the domain's services take it without importing ingest.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memdash.foom.logic.classify import EndFacts, RunFacts


@dataclass(frozen=True)
class SessionReport:
    id: str
    device_id: str
    device_model: str
    build_version: str
    build_number: str
    build_commit: str
    binary_uuid: str
    os: str
    boot_time: datetime | None
    started_at: datetime
    last_seen_at: datetime | None
    end: EndFacts | None
    bot: bool
    pid: int | None = None  # the process id (Android), to match the OS's record of its exit

    def run_facts(self) -> RunFacts:
        return RunFacts(
            build_version=self.build_version,
            build_number=self.build_number,
            binary_uuid=self.binary_uuid,
            os=self.os,
            boot_time=self.boot_time,
            bot=self.bot,
            end=self.end,
        )
