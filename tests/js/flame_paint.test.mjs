// static/js/flame/paint.js against a 2D context that records what is drawn (every character
// 6 px wide): which boxes are filled where, which labels are written, cut and in what colour.
import assert from "node:assert/strict";
import {test} from "node:test";

import {layout} from "../../static/js/flame/layout.js";
import {FONT, paint, ROW} from "../../static/js/flame/paint.js";

function recordingContext() {
  const calls = [];
  const ctx = {calls, font: "", textBaseline: "", fillStyle: ""};
  ctx.measureText = (text) => ({width: text.length * 6});
  const record = (name, withFill) => (...args) => {
    calls.push([name, ...args, ...(withFill ? [ctx.fillStyle] : [])]);
  };
  ctx.setTransform = record("setTransform", false);
  ctx.clearRect = record("clearRect", false);
  ctx.fillRect = record("fillRect", true); // with the colour it is filled in
  ctx.fillText = record("fillText", true);
  return ctx;
}

function near(actual, expected) {
  assert.ok(Math.abs(actual - expected) < 1e-9, `${actual} is not ${expected}`);
}

const LONG = "a_function_with_a_name_far_too_long_for_its_box_in_the_flame_graph_here"; // 72
// 600 px wide: main 360 px, worker 234 px, tiny 5.94 px (no label), dust 0.06 px (not drawn)
const DATA = {
  ids: ["all", "main", "worker", "tiny", "dust"],
  labels: ["all", LONG, "worker", "tiny", "dust"],
  parents: ["", "all", "all", "all", "all"],
  values: [10000, 6000, 3900, 99, 1],
};
const FILLS = ["#ffffff", "#2166ac", "#f7f7f7", "#9bbcf0", "#000000"];

test("paints each box one pixel short of its row, labels where they fit", () => {
  const ctx = recordingContext();
  paint(ctx, {labels: DATA.labels, boxes: layout(DATA), fills: FILLS, width: 600, ratio: 2});
  assert.equal(ctx.font, FONT);
  assert.equal(ctx.textBaseline, "middle");
  const [transform, clear, ...drawn] = ctx.calls;
  assert.deepEqual(transform, ["setTransform", 2, 0, 0, 2, 0, 0]);
  assert.deepEqual(clear, ["clearRect", 0, 0, 600, 2 * ROW]);
  const names = drawn.map((call) => call[0]);
  // all: box and label; main: box and label; worker: box and label; tiny: box only; dust: nothing
  assert.deepEqual(names, ["fillRect", "fillText", "fillRect", "fillText", "fillRect", "fillText",
    "fillRect"]);
  const [all, allText, main, mainText, worker, workerText, tiny] = drawn;
  assert.deepEqual(all, ["fillRect", 0, 0, 599.5, ROW - 1, "#ffffff"]);
  assert.deepEqual(allText, ["fillText", "all", 3, ROW / 2, "#1d1d1f"]);
  assert.deepEqual(main.slice(1, 3), [0, ROW]);
  near(main[3], 359.5);
  assert.equal(main[5], "#2166ac");
  // (360 - 6) / 6 = 59 characters: 58 of the name and an ellipsis, white on the dark blue
  assert.deepEqual(mainText, ["fillText", LONG.slice(0, 58) + "…", 3, ROW + ROW / 2, "#ffffff"]);
  near(worker[1], 360);
  near(worker[3], 233.5);
  assert.equal(workerText[1], "worker");
  assert.equal(workerText[4], "#1d1d1f");
  near(tiny[1], 594);
  near(tiny[3], 5.44);
});

test("a box narrower than the least drawn is kept at that least once drawn", () => {
  const ctx = recordingContext();
  const data = {ids: ["a", "b"], labels: ["a", "b"], parents: ["", "a"], values: [1000, 1]};
  paint(ctx, {labels: data.labels, boxes: layout(data), fills: ["#ffffff", "#ffffff"], width: 400});
  const b = ctx.calls.filter((call) => call[0] === "fillRect")[1];
  near(b[3], 0.3); // 0.4 px wide, less the half-pixel gap, is 0.3 at least
});
