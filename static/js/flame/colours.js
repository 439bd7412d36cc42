// A flame graph's colours, one per node, apart from its layout and painting. Pure:
// tests/js/flame_colours.test.mjs.
//
// A call tree: a colour per library (system libraries grey); with a search, matches stand out
// and the rest is dimmed. A diff (data.delta): its change, shrink blue, growth red, white for
// none, the largest change the fullest colour.
export const PALETTE = ["#9bbcf0", "#f2b48a", "#a8d8a0", "#e6a8d6", "#f0d98c", "#9fd6d6", "#c9b4ef",
  "#f0a3a3", "#c4d88f", "#b9c3cf"];
export const SYSTEM = "#d4d4d4", OTHER = "#ececec", MATCH = "#ff8c1a", DIM = "#e4e9f0";
export const NO_CHANGE = "#f7f7f7", SHRINK = "#2166ac", GROWTH = "#b2182b";

// A string's hash (Java's String.hashCode, made positive): the same library, the same colour.
export function hash(text) {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) | 0;
  return Math.abs(h);
}

// Two #rrggbb colours mixed, t from 0 (a) to 1 (b).
export function mix(a, b, t) {
  let out = "#";
  for (let i = 1; i < 7; i += 2) {
    const x = parseInt(a.slice(i, i + 2), 16), y = parseInt(b.slice(i, i + 2), 16);
    out += ("0" + Math.round(x + (y - x) * t).toString(16)).slice(-2);
  }
  return out;
}

// Whether a #rrggbb colour is dark (its luma, ITU-R BT.601, under 140 of 255).
export function isDark(colour) {
  const r = parseInt(colour.slice(1, 3), 16), g = parseInt(colour.slice(3, 5), 16);
  const b = parseInt(colour.slice(5, 7), 16);
  return 0.299 * r + 0.587 * g + 0.114 * b < 140;
}

// The colour of a label drawn on a box of this colour.
export function textColour(fill) {
  return isDark(fill) ? "#ffffff" : "#1d1d1f";
}

// The fill of every node, in the order of data.ids.
export function colours(data) {
  if (data.delta) {
    let most = 1;
    data.delta.forEach((d) => { most = Math.max(most, Math.abs(d)); });
    return data.delta.map((d, i) => {
      if (data.kinds[i] === "other") return OTHER;
      // a change the rank test does not tell from noise is not coloured as one
      if (data.significant && !data.significant[i]) return NO_CHANGE;
      const t = Math.min(1, Math.abs(d) / most);
      return mix(NO_CHANGE, d < 0 ? SHRINK : GROWTH, t);
    });
  }
  const searching = data.match.some(Boolean);
  return data.ids.map((_, i) => {
    const kind = data.kinds[i];
    if (searching && kind !== "all") return data.match[i] ? MATCH : DIM;
    if (kind === "other" || kind === "all") return OTHER;
    if (data.system && data.system[i]) return SYSTEM;
    return PALETTE[hash(data.images[i] || kind) % PALETTE.length];
  });
}
