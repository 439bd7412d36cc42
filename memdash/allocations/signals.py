"""Sent when a snapshot and all its totals were stored, inside the storing transaction:
`snapshot`. A lens that keeps something made from a build's snapshots (build compare's
summaries) connects a receiver that refreshes it once the transaction commits."""

from django.dispatch import Signal

snapshot_stored = Signal()
