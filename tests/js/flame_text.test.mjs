// static/js/flame/text.js: labels cut to their box, and the tooltip's figures.
import assert from "node:assert/strict";
import {test} from "node:test";

import {fitLabel, hoverText} from "../../static/js/flame/text.js";

test("fitLabel: whole when it fits, cut with an ellipsis, or nothing", () => {
  assert.equal(fitLabel("malloc", 6), "malloc");
  assert.equal(fitLabel("malloc", 4), "mal…");
  assert.equal(fitLabel("malloc", 2), "m…");
  assert.equal(fitLabel("malloc", 1), "");
  assert.equal(fitLabel("malloc", -3), "");
});

const CALL_TREE = {
  labels: ["all", "malloc", "other"],
  values: [2048, 512, 100],
  images: ["", "libsystem_malloc.dylib", ""],
  kinds: ["all", "frame", "other"],
};

test("a call tree's node: its bytes and its share of the root, its library", () => {
  // 512 of 2048 bytes: 25 %
  assert.equal(hoverText(CALL_TREE, 1), "malloc\n512 Bytes · 25.00 %\nlibsystem_malloc.dylib");
  assert.equal(hoverText(CALL_TREE, 0), "all\n2.00 KiB · 100.00 %");
});

test("medians drawn as remainders: the tooltip gives the node's own size, not its remainder", () => {
  // a build's tree per snapshot: the root's median is 1000 bytes, its one child's 600, so the
  // root's remainder is 400; the tooltip says 1000 (100 %) and 600 (60 %)
  const medians = {...CALL_TREE, labels: ["all", "malloc"], values: [400, 600], sizes: [1000, 600],
                   branchvalues: "remainder", images: ["", ""], kinds: ["all", "frame"]};
  assert.equal(hoverText(medians, 0), "all\n1000 Bytes · 100.00 %");
  assert.equal(hoverText(medians, 1), "malloc\n600 Bytes · 60.00 %");
});

test("merged nodes say so", () => {
  assert.equal(hoverText(CALL_TREE, 2), "other\n100 Bytes · 4.88 %\nthe lightest nodes here, merged");
});

test("counted in allocations: counts, not bytes", () => {
  const counted = {...CALL_TREE, unit: "count", values: [20000, 1500, 0]};
  assert.equal(hoverText(counted, 1), "malloc\n1,500 · 7.50 %\nlibsystem_malloc.dylib");
});

test("a diff's node: both sides and the change, signed", () => {
  const diff = {
    labels: ["all", "grew", "shrank"],
    base: [4096, 1024, 2048],
    target: [5632, 3072, 512],
    delta: [1536, 2048, -1536],
    images: ["", "", "libA"],
    kinds: ["all", "frame", "frame"],
  };
  assert.equal(hoverText(diff, 1), "grew\nbase 1.00 KiB → target 3.00 KiB\nΔ +2.00 KiB");
  assert.equal(hoverText(diff, 2), "shrank\nbase 2.00 KiB → target 512 Bytes\nΔ -1.50 KiB\nlibA");
});

test("a focused graph: the callers above say their own figures, not their width", () => {
  // All allocations 4096 > main 3072 > parse 1024 (focused): drawn 1024 wide each
  const focused = {
    labels: ["All allocations", "main", "parse"], values: [1024, 1024, 1024],
    sizes: [4096, 3072, 1024], images: ["", "", ""], kinds: ["all", "frame", "frame"],
  };
  assert.equal(hoverText(focused, 1), "main\n3.00 KiB · 75.00 %");
  assert.equal(hoverText(focused, 2), "parse\n1.00 KiB · 25.00 %");
});
