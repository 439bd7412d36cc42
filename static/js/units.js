// Numbers as memdash prints them, in the browser exactly as on the server, so that a tree row and
// the table beside it agree: bytes as memdash.core.logic.units.format_bytes (Instruments' binary units,
// whole bytes under 1 KiB, two decimals above, a tie rounded to even as Python does) and counts
// as the `intcomma` filter (17,862; an average keeps one decimal). Pure: tests/js/units.test.mjs.
const UNITS = [["GiB", 1073741824], ["MiB", 1048576], ["KiB", 1024]];

// Two decimals as Python's format(x, ".2f"): toFixed rounds an exact tie up (1.125 -> 1.13)
// where Python rounds it to even (1.12). A size over a power of two is exact in binary, so
// x * 100 shows a tie exactly.
function twoDecimals(x) {
  const scaled = x * 100;
  const whole = Math.floor(scaled);
  if (scaled - whole === 0.5 && whole % 2 === 0) return (whole / 100).toFixed(2);
  return x.toFixed(2);
}

export function formatBytes(n) {
  const sign = n < 0 ? "-" : "";
  const abs = Math.abs(n);
  for (const [unit, size] of UNITS) {
    if (abs >= size) return sign + twoDecimals(abs / size) + " " + unit;
  }
  return sign + Math.trunc(abs) + " Bytes";
}

export function formatCount(n) {
  return Number(n).toLocaleString("en-US", {maximumFractionDigits: 1});
}
