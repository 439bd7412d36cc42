// static/js/flame/layout.js: each node's box (x0, x1 as parts of the width) and depth, worked
// out by hand for small trees.
import assert from "node:assert/strict";
import {test} from "node:test";

import {layout, nodeAt} from "../../static/js/flame/layout.js";

function near(actual, expected) {
  assert.ok(Math.abs(actual - expected) < 1e-12, `${actual} is not ${expected}`);
}

function boxes(result) {
  return Array.from(result.x0, (x0, i) => [x0, result.x1[i], result.depth[i]]);
}

function same(result, expected) {
  boxes(result).forEach(([x0, x1, depth], i) => {
    near(x0, expected[i][0]);
    near(x1, expected[i][1]);
    assert.equal(depth, expected[i][2], `depth of node ${i}`);
  });
}

// all (10) -> main (6) -> alloc (3); all -> worker (4)
const TOTAL = {
  ids: ["all", "main", "worker", "alloc"],
  parents: ["", "all", "all", "main"],
  values: [10, 6, 4, 3],
  branchvalues: "total",
};

test("total: a child is as wide as its share of its parent, left to right", () => {
  const result = layout(TOTAL);
  // main: 6/10 of the width; worker the next 4/10; alloc: 3/6 of main's 0.6
  same(result, [[0, 1, 0], [0, 0.6, 1], [0.6, 1, 1], [0, 0.3, 2]]);
  assert.equal(result.levels, 3);
  assert.deepEqual(result.order, [0, 1, 2, 3]); // parents first
});

test("remainder: a node's own value is added to its children's", () => {
  // the same tree told by what each node has beyond its children: all 0, main 3, worker 4, alloc 3
  const result = layout({...TOTAL, values: [0, 3, 4, 3], branchvalues: "remainder"});
  same(result, [[0, 1, 0], [0, 0.6, 1], [0.6, 1, 1], [0, 0.3, 2]]);
});

test("a parent heavier than its children leaves the rest of its width empty", () => {
  const result = layout({ids: ["a", "b"], parents: ["", "a"], values: [10, 4]});
  same(result, [[0, 1, 0], [0, 0.4, 1]]);
});

test("several roots share the width by weight, evenly when they weigh nothing", () => {
  same(layout({ids: ["r1", "r2"], parents: ["", ""], values: [1, 3]}), [[0, 0.25, 0], [0.25, 1, 0]]);
  same(layout({ids: ["r1", "r2"], parents: ["", ""], values: [0, 0]}), [[0, 0.5, 0], [0.5, 1, 0]]);
});

test("a node whose parent was pruned away is a root", () => {
  const result = layout({ids: ["a", "b"], parents: ["", "gone"], values: [1, 1]});
  same(result, [[0, 0.5, 0], [0.5, 1, 0]]);
  assert.equal(result.levels, 1);
});

test("nodeAt: the node on a row under a point, left edge in, right edge out", () => {
  const result = layout(TOTAL);
  assert.equal(nodeAt(result, 0.99, 0), 0);
  assert.equal(nodeAt(result, 1, 0), -1);
  assert.equal(nodeAt(result, 0.6, 1), 2); // worker starts where main ends
  assert.equal(nodeAt(result, 0.1, 2), 3);
  assert.equal(nodeAt(result, 0.5, 2), -1); // beside alloc, under main: nothing
  assert.equal(nodeAt(result, 0.1, 3), -1); // below the deepest row
});

test("flip: the root on the bottom row, the same widths", () => {
  const result = layout(TOTAL, true);
  // 3 rows: all at depth 2, main and worker 1, alloc 0 (the top)
  same(result, [[0, 1, 2], [0, 0.6, 1], [0.6, 1, 1], [0, 0.3, 0]]);
  assert.equal(nodeAt(result, 0.1, 0), 3);
  assert.equal(nodeAt(result, 0.1, 2), 0);
});
