// static/js/flame/colours.js: a fill per node. Colours worked out by hand from the palette.
import assert from "node:assert/strict";
import {test} from "node:test";

import {colours, DIM, GROWTH, hash, isDark, MATCH, mix, NO_CHANGE, OTHER, PALETTE, SHRINK, SYSTEM,
  textColour} from "../../static/js/flame/colours.js";

test("mix: a straight line between two colours, each channel rounded", () => {
  assert.equal(mix("#000000", "#ffffff", 0), "#000000");
  assert.equal(mix("#000000", "#ffffff", 1), "#ffffff");
  assert.equal(mix("#000000", "#ffffff", 0.5), "#808080"); // 127.5 -> 128
  // f7 247 -> b2 178: 212.5 -> 213 (d5); f7 -> 18 (24): 135.5 -> 136 (88); f7 -> 2b (43): 145 (91)
  assert.equal(mix("#f7f7f7", "#b2182b", 0.5), "#d58891");
});

test("isDark: luma under 140 of 255; labels on it are white", () => {
  assert.equal(isDark("#8b8b8b"), true); // 139
  assert.equal(isDark("#8c8c8c"), false); // 140
  assert.equal(isDark("#2166ac"), true); // .299·33 + .587·102 + .114·172 = 89.3
  assert.equal(isDark(NO_CHANGE), false);
  assert.equal(textColour("#2166ac"), "#ffffff");
  assert.equal(textColour(PALETTE[0]), "#1d1d1f");
});

test("hash: the same text, the same number (Java's String.hashCode)", () => {
  assert.equal(hash(""), 0);
  assert.equal(hash("a"), 97);
  assert.equal(hash("ab"), 97 * 31 + 98);
  // l 108, i 105, b 98, A 65: 108·31³ + 105·31² + 98·31 + 65
  assert.equal(hash("libA"), 3321436);
});

// the root (all), two frames of libA, one of a system library, the merged lightest nodes
const CALL_TREE = {
  ids: ["r", "a1", "a2", "s", "o"],
  kinds: ["all", "frame", "frame", "frame", "other"],
  images: ["", "libA", "libA", "libsystem_malloc.dylib", ""],
  system: [false, false, false, true, false],
  match: [false, false, false, false, false],
};

test("a call tree: a colour per library, system libraries grey, the rest light", () => {
  // hash("libA") = 3321436, which is 6 mod 10
  assert.deepEqual(colours(CALL_TREE), [OTHER, PALETTE[6], PALETTE[6], SYSTEM, OTHER]);
  assert.equal(PALETTE[6], "#c9b4ef");
});

test("a search: its matches stand out, everything else but the root is dimmed", () => {
  const searched = {...CALL_TREE, match: [false, true, false, false, false]};
  assert.deepEqual(colours(searched), [OTHER, MATCH, DIM, DIM, DIM]);
});

test("a diff: shrink blue, growth red, as strong as the change against the largest", () => {
  const diff = {
    ids: ["r", "a", "b", "c", "o"],
    kinds: ["all", "frame", "frame", "frame", "other"],
    delta: [-10, 5, 0, 10, 3],
  };
  assert.deepEqual(colours(diff), [SHRINK, mix(NO_CHANGE, GROWTH, 0.5), NO_CHANGE, GROWTH, OTHER]);
  assert.equal(SHRINK, "#2166ac");
  assert.equal(GROWTH, "#b2182b");
});

test("a diff's change the rank test does not find is drawn as no change", () => {
  // b shrank by 10 and c grew by 10, but only c's change is significant: b stays white
  const diff = {
    ids: ["r", "b", "c"],
    kinds: ["all", "frame", "frame"],
    delta: [0, -10, 10],
    significant: [false, false, true],
  };
  assert.deepEqual(colours(diff), [NO_CHANGE, NO_CHANGE, GROWTH]);
});

test("a diff with no change at all is white, not a division by zero", () => {
  assert.deepEqual(colours({ids: ["r"], kinds: ["all"], delta: [0]}), [NO_CHANGE]);
});
