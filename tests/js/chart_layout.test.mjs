// static/js/chart_layout.js: on a phone the legend goes above the plot and the figure grows by
// its rows (20 px each, worked out from the entries listed), so the plot keeps its height.
import assert from "node:assert/strict";
import {test} from "node:test";

import {legendItems, modebarClearance, narrowLayout} from "../../static/js/chart_layout.js";

const DATA = [
  {name: "FOOM rate", showlegend: false}, // a band's edge: not listed
  {name: "FOOM rate: 95% interval"},
  {name: "FOOM rate"},
  {name: "OS memory kill rate"},
];

test("the legend's entries are the named traces it shows", () => {
  assert.equal(legendItems(DATA), 3);
  assert.equal(legendItems([]), 0);
});

test("wide screens keep the layout as built", () => {
  const layout = {height: 360};
  assert.equal(narrowLayout(layout, DATA, 1400, 400), layout);
});

test("a phone puts the legend above and grows the figure by its rows", () => {
  const layout = {height: 360, margin: {t: 30, b: 60}, legend: {font: {size: 11}}};
  const narrow = narrowLayout(layout, DATA, 390, 400);
  assert.equal(narrow.height, 360 + 3 * 20);
  assert.deepEqual(narrow.margin, {t: 30 + 3 * 20, b: 60});
  assert.equal(narrow.legend.yanchor, "bottom");
  assert.equal(narrow.legend.font.size, 11);
  assert.equal(layout.height, 360); // the figure as built is left alone
  // no height in the layout: the chart's default one, grown
  assert.equal(narrowLayout({}, DATA, 390, 400).height, 400 + 60);
});

test("one trace, or a figure without a legend, is left alone", () => {
  const layout = {showlegend: false};
  assert.equal(narrowLayout(layout, DATA, 390, 400), layout);
  const single = {};
  assert.equal(narrowLayout(single, [{name: "x"}], 390, 400), single);
});

test("a legend under plotly's toolbar moves down below it, with a gap", () => {
  const toolbar = {left: 400, right: 660, top: 2, bottom: 28};
  // the legend's first row from 20 px to 40 px reaches x 500: 28 - 20 + 4 = 12 px down
  assert.equal(modebarClearance(toolbar, {left: 80, right: 500, top: 20, bottom: 60}), 12);
  // a short legend ending left of the toolbar, or one below it, stays
  assert.equal(modebarClearance(toolbar, {left: 80, right: 380, top: 20, bottom: 40}), 0);
  assert.equal(modebarClearance(toolbar, {left: 80, right: 600, top: 30, bottom: 50}), 0);
  assert.equal(modebarClearance(null, {left: 0, right: 1, top: 0, bottom: 1}), 0);
});
