// A flame graph's words: a node's label cut to its box, and the figures its tooltip shows. Pure:
// tests/js/flame_text.test.mjs.
import {formatBytes, formatCount} from "../units.js";

// The label as it fits in `room` characters: whole, cut with an ellipsis, or "" (no room).
export function fitLabel(label, room) {
  if (label.length <= room) return label;
  return room > 1 ? label.slice(0, room - 1) + "…" : "";
}

// The tooltip of node i: its label, its figures (a diff: both sides and the change; a call
// tree: its bytes or allocations and its share of the root's; `sizes` when `values` are
// remainders, as a build's tree of medians per snapshot sends them), its library.
export function hoverText(data, i) {
  const lines = [data.labels[i]];
  if (data.delta) {
    const d = data.delta[i];
    lines.push("base " + formatBytes(data.base[i]) + " → target " + formatBytes(data.target[i]));
    lines.push("Δ " + (d > 0 ? "+" : "") + formatBytes(d));
  } else {
    // `sizes`: each node's own figure where its width is another (remainders; the callers
    // drawn above a focused node as wide as it); the share is of the top node's
    const unit = data.unit === "count" ? formatCount : formatBytes;
    const sizes = data.sizes || data.values;
    const root = sizes[0] || 1;
    lines.push(unit(sizes[i]) + " · " + (100 * sizes[i] / root).toFixed(2) + " %");
  }
  if (data.images[i]) lines.push(data.images[i]);
  if (data.kinds[i] === "other") lines.push("the lightest nodes here, merged");
  return lines.join("\n");
}
