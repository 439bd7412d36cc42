// static/js/timeline_range.js: a dragged range snaps to the buckets it overlaps, as the server's
// Buckets.span does (tests/snapshots/test_timeline.py: 100 buckets of 10 ms from 0).
import assert from "node:assert/strict";
import {test} from "node:test";

import {snapRange, snapToPoints, withRange} from "../../static/js/timeline_range.js";

const RUN = {startMs: 0, bucketMs: 10, count: 100};

test("a drag covers the whole buckets it touches", () => {
  // 0.015 s to 0.025 s: buckets 1 and 2, [10, 30) ms
  assert.deepEqual(snapRange(0.015, 0.025, RUN), {from_ms: 10, to_ms: 30});
  // right to left is the same range
  assert.deepEqual(snapRange(0.025, 0.015, RUN), {from_ms: 10, to_ms: 30});
  // ending on an edge does not take the next bucket
  assert.deepEqual(snapRange(0.02, 0.03, RUN), {from_ms: 20, to_ms: 30});
});

test("a drag past the ends is cut to the run; one outside it is none", () => {
  assert.deepEqual(snapRange(-1, 5, RUN), {from_ms: 0, to_ms: 1000});
  assert.equal(snapRange(2, 3, RUN), null);
  assert.equal(snapRange(-3, -2, RUN), null);
});

test("buckets that do not start at zero", () => {
  const run = {startMs: 1000, bucketMs: 2.5, count: 4}; // 1000 to 1010 ms
  assert.deepEqual(snapRange(1.0026, 1.0051, run), {from_ms: 1002.5, to_ms: 1007.5});
});

test("the query keeps the other filters, sets the range and goes back to page one", () => {
  const query = withRange("?lifespan=persistent&page=3&from_ms=1", {from_ms: 10, to_ms: 30});
  const params = new URLSearchParams(query);
  assert.equal(params.get("lifespan"), "persistent");
  assert.equal(params.get("page"), null);
  assert.equal(params.get("from_ms"), "10");
  assert.equal(params.get("to_ms"), "30");
});

test("a massif run's range is the snapshots in it", () => {
  const times = [0, 230, 230, 231, 238]; // ms, as massif.out.leaky's
  assert.deepEqual(snapToPoints(0.2, 0.2335, times), {from_ms: 230, to_ms: 231});
  assert.deepEqual(snapToPoints(0.25, 0.1, times), {from_ms: 230, to_ms: 238});
  assert.equal(snapToPoints(0.232, 0.237, times), null);
});
