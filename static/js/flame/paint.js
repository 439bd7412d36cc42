// A flame graph painted on a canvas's 2D context: the one part of the flame graph that draws.
// The boxes come from layout.js, the fills from colours.js, the labels are cut by text.js; tests
// (tests/js/flame_paint.test.mjs) hand it a context that records what is drawn. Labels are
// canvas text, never HTML.
import {textColour} from "./colours.js";
import {fitLabel} from "./text.js";

export const ROW = 20; // CSS pixels per level
export const FONT = "11px system-ui, -apple-system, Segoe UI, sans-serif";
const MIN_TEXT = 28; // no label on a narrower box
const MIN_BOX = 0.3; // no box narrower than this is drawn

// Paint `boxes` (layout.js) `width` CSS pixels wide on `ctx`, scaled by `ratio` (device pixels
// per CSS pixel); the canvas is already sized (width × boxes.levels * ROW, times ratio).
export function paint(ctx, {labels, boxes, fills, width, ratio = 1}) {
  const height = boxes.levels * ROW;
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  const charWidth = ctx.measureText("abcdefghijklmnopqrstuvwxyz").width / 26;
  for (let k = 0; k < boxes.order.length; k++) {
    const i = boxes.order[k];
    const x = boxes.x0[i] * width, w = (boxes.x1[i] - boxes.x0[i]) * width;
    if (w < MIN_BOX) continue;
    const y = boxes.depth[i] * ROW;
    ctx.fillStyle = fills[i];
    ctx.fillRect(x, y, Math.max(w - 0.5, MIN_BOX), ROW - 1);
    if (w < MIN_TEXT) continue;
    const label = fitLabel(labels[i], Math.floor((w - 6) / charWidth));
    if (!label) continue;
    ctx.fillStyle = textColour(fills[i]);
    ctx.fillText(label, x + 3, y + ROW / 2);
  }
}
