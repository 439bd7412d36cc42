// Numbers as memdash prints them, in the browser exactly as on the server, so that a tree row and
// the table beside it agree: bytes as memdash.core.logic.units.format_bytes (Instruments' binary units,
// whole bytes under 1 KiB, two decimals above, a tie rounded to even as Python does) and counts
// as the `intcomma` filter (17,862; an average keeps one decimal).
(function () {
  "use strict";
  var UNITS = [["GiB", 1073741824], ["MiB", 1048576], ["KiB", 1024]];

  // Two decimals as Python's format(x, ".2f"): toFixed rounds an exact tie up (1.125 -> 1.13)
  // where Python rounds it to even (1.12). A size over a power of two is exact in binary, so
  // x * 100 shows a tie exactly.
  function twoDecimals(x) {
    var scaled = x * 100;
    var whole = Math.floor(scaled);
    if (scaled - whole === 0.5 && whole % 2 === 0) return (whole / 100).toFixed(2);
    return x.toFixed(2);
  }

  function formatBytes(n) {
    var sign = n < 0 ? "-" : "";
    var abs = Math.abs(n);
    for (var i = 0; i < UNITS.length; i++) {
      if (abs >= UNITS[i][1]) return sign + twoDecimals(abs / UNITS[i][1]) + " " + UNITS[i][0];
    }
    return sign + Math.trunc(abs) + " Bytes";
  }

  function formatCount(n) {
    return Number(n).toLocaleString("en-US", {maximumFractionDigits: 1});
  }

  window.memdashUnits = {formatBytes: formatBytes, formatCount: formatCount};
})();
