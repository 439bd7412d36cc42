"""A function of the database that summarises the new ranges of every BRIN index of one table,
where the table is: on Citus, called inside a query routed to one shard, it runs on that shard's
worker with the shard's own oid (`allocations.writes.partitions`). Made on every node by
`site.writes.citus`; on one PostgreSQL the summary names the index directly instead."""

from __future__ import annotations

# The new ranges of every BRIN index of one table, summarised where the table is (on Citus, a
# shard on its worker); with the lock given up after a moment there too (the coordinator's
# lock_timeout does not travel with the query). The index's access method by its operator
# class: a worker hides its shards' own relations from pg_class.
BRIN_SUMMARY_FUNCTION = "memdash_brin_summarize_new_values"
BRIN_SUMMARY_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION {BRIN_SUMMARY_FUNCTION}(tab oid) RETURNS bigint
LANGUAGE sql VOLATILE SET lock_timeout = '2s' AS $$
  SELECT coalesce(sum(brin_summarize_new_values(i.indexrelid)), 0)::bigint
  FROM pg_index i JOIN pg_opclass o ON o.oid = i.indclass[0] JOIN pg_am a ON a.oid = o.opcmethod
  WHERE i.indrelid = tab AND a.amname = 'brin'
$$"""
