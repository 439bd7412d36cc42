// static/js/tree_state.js: the tree's open nodes, selection and view in the address.
import assert from "node:assert/strict";
import {test} from "node:test";

import {formatHash, parseHash} from "../../static/js/tree_state.js";

test("an empty hash is an empty state, and the empty state writes no hash", () => {
  assert.deepEqual(parseHash(""), {open: [], sel: "", view: ""});
  assert.deepEqual(parseHash("#"), {open: [], sel: "", view: ""});
  assert.equal(formatHash({open: [], sel: "", view: ""}), "");
  assert.equal(formatHash({}), "");
});

test("the view, the open path (parents first) and the selection", () => {
  const hash = "#view=flame&open=0,0.3,0.3.1&sel=0.3.1";
  assert.deepEqual(parseHash(hash), {open: ["0", "0.3", "0.3.1"], sel: "0.3.1", view: "flame"});
  assert.equal(formatHash({open: ["0", "0.3", "0.3.1"], sel: "0.3.1", view: "flame"}), hash);
});

test("the order of the parts does not matter when reading", () => {
  assert.deepEqual(parseHash("sel=t~9&open=t~1"), {open: ["t~1"], sel: "t~9", view: ""});
});

test("ids are encoded: a comma or an ampersand stays inside its id", () => {
  const state = {open: ["a,b", "c&d", "é"], sel: "x=y", view: ""};
  const hash = formatHash(state);
  assert.equal(hash, "#open=a%2Cb,c%26d,%C3%A9&sel=x%3Dy");
  assert.deepEqual(parseHash(hash), state);
});

test("unknown keys and parts without a value are left out", () => {
  assert.deepEqual(parseHash("#zoom=2&open&sel=5&view="), {open: [], sel: "5", view: ""});
});
