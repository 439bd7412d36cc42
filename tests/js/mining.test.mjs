import assert from "node:assert/strict";
import {test} from "node:test";

import {actions, chips, hasRules, minimum, readRules, setFilters, withoutRule, withRule, writeRules} from "../../static/js/mining.js";

test("rules read from and written to a query string, in a fixed order", () => {
  const params = new URLSearchParams("prune_symbol=malloc&charge=libjson&prune_symbol=&prune_symbol=malloc&remove_library=UIKitCore");
  const rules = readRules(params);
  assert.deepEqual(rules.prune_symbol, ["malloc"]);
  assert.deepEqual(rules.charge, ["libjson"]);
  assert.deepEqual(rules.remove_library, ["UIKitCore"]);
  assert.deepEqual(rules.charge_symbol, []);
  assert.equal(writeRules(rules, new URLSearchParams()).toString(),
    "charge=libjson&prune_symbol=malloc&remove_library=UIKitCore");
  assert.ok(hasRules(rules));
  assert.ok(!hasRules(readRules(new URLSearchParams("search=x"))));
});

test("adding a rule twice keeps one, taking it back leaves the rest", () => {
  let rules = readRules(new URLSearchParams());
  rules = withRule(withRule(rules, "prune_symbol", "a b"), "prune_symbol", "a b");
  rules = withRule(rules, "remove_symbol", "c");
  assert.deepEqual(rules.prune_symbol, ["a b"]);
  const back = withoutRule(rules, "prune_symbol", "a b");
  assert.deepEqual(back.prune_symbol, []);
  assert.deepEqual(back.remove_symbol, ["c"]);
  assert.deepEqual(rules.prune_symbol, ["a b"]); // the old rules stay as they were
  assert.equal(writeRules(rules, new URLSearchParams()).toString(), "prune_symbol=a+b&remove_symbol=c");
});

test("a chip per rule says what it does", () => {
  const rules = withRule(withRule(readRules(new URLSearchParams()), "charge", "libjson"), "prune_symbol", "malloc");
  assert.deepEqual(chips(rules).map((c) => c.text), ["Charged to callers: libjson", "Pruned: malloc"]);
  assert.equal(chips(rules)[1].label, "Take back: pruned symbol malloc");
});

test("a frame offers its symbol's and library's rules and its sandwich; others nothing", () => {
  const frame = actions({kind: "frame", symbol: "malloc", image: "libsystem_malloc.dylib"});
  assert.deepEqual(frame.map((a) => a.text), [
    "Charge malloc to callers", "Charge library libsystem_malloc.dylib to callers",
    "Prune malloc", "Prune library libsystem_malloc.dylib", "Remove malloc",
    "Remove library libsystem_malloc.dylib", "Sandwich of malloc",
  ]);
  assert.equal(frame[1].param, "charge");
  assert.equal(frame[6].param, "sandwich");
  // no image (an app frame named by the tree): the symbol's rules only
  assert.equal(actions({kind: "frame", symbol: "main", image: ""}).length, 4);
  assert.deepEqual(actions({kind: "other", symbol: "other (3 nodes)"}), []);
  assert.deepEqual(actions({kind: "thread", symbol: "main"}), []);
  assert.deepEqual(actions(null), []);
});

test("a minimum is a whole number above 0 or nothing", () => {
  assert.equal(minimum("1024"), "1024");
  assert.equal(minimum(" 007 "), "7");
  assert.equal(minimum("0"), "");
  assert.equal(minimum("-5"), "");
  assert.equal(minimum("1e3"), "");
  assert.equal(minimum(""), "");
});

test("a page's filters on a request: lists repeated, empty values left out", () => {
  const params = setFilters(new URLSearchParams("base=a"),
    {prune_symbol: ["x", "", "y z"], min_bytes: "100", search: "", inverted: "1"});
  assert.equal(params.toString(), "base=a&prune_symbol=x&prune_symbol=y+z&min_bytes=100&inverted=1");
  assert.equal(setFilters(new URLSearchParams(), undefined).toString(), "");
});
