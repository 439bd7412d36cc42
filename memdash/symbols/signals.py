"""Sent when debug files were stored (after the transaction commits): `app`, `job` (a
SymbolicationJob to run). The floor that stores frames connects a receiver that runs the job."""

from django.dispatch import Signal

debug_files_stored = Signal()
