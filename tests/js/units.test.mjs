// static/js/units.js prints bytes as memdash.core.logic.units.format_bytes does (Instruments'
// binary units, two decimals, a tie rounded to even as Python's format does) and counts as the
// intcomma filter. Expected strings worked out by hand; tests/browser/test_units_browser.py
// checks the browser prints what the server does.
import assert from "node:assert/strict";
import {test} from "node:test";

import {formatBytes, formatCount} from "../../static/js/units.js";

test("under a KiB: whole bytes, cut not rounded", () => {
  assert.equal(formatBytes(0), "0 Bytes");
  assert.equal(formatBytes(48), "48 Bytes");
  assert.equal(formatBytes(1023), "1023 Bytes");
  assert.equal(formatBytes(1023.7), "1023 Bytes");
});

test("binary units with two decimals", () => {
  assert.equal(formatBytes(1024), "1.00 KiB");
  assert.equal(formatBytes(1536), "1.50 KiB"); // 1536 / 1024 = 1.5
  assert.equal(formatBytes(1180), "1.15 KiB"); // 1.15234375
  assert.equal(formatBytes(1024 ** 2 - 1), "1024.00 KiB"); // 1023.999…: still KiB, rounded
  assert.equal(formatBytes(1024 ** 2), "1.00 MiB");
  assert.equal(formatBytes(3 * 1024 ** 3), "3.00 GiB");
});

test("a tie of two decimals is rounded to even, as Python does", () => {
  assert.equal(formatBytes(1152), "1.12 KiB"); // 1.125: toFixed alone says 1.13
  assert.equal(formatBytes(1664), "1.62 KiB"); // 1.625
  assert.equal(formatBytes(1408), "1.38 KiB"); // 1.375: 8 is the even neighbour
});

test("a negative size keeps its sign", () => {
  assert.equal(formatBytes(-1152), "-1.12 KiB");
  assert.equal(formatBytes(-48), "-48 Bytes");
});

test("counts with thousands separators, an average with one decimal", () => {
  assert.equal(formatCount(17862), "17,862");
  assert.equal(formatCount(-1323.94), "-1,323.9");
  assert.equal(formatCount(1234567), "1,234,567");
  assert.equal(formatCount(0), "0");
});
