// Draws every plotly chart of the page: <div data-chart="ID"> with its figure in <script id="ID">.
// A trace may carry customdata URLs: clicking a point then opens that page (e.g. a build).
//
// Only pages that draw a chart load this file (the chart tag marks them; base.html). The plotly
// bundle (4.6 MiB, about 1 MiB compressed) is preloaded by the page and run from here once the
// page is parsed, so tables and text show and work before plotly has been read.
// In a dark colour scheme the figures take the page's colours (CSS variables of memdash.css).
// a module has no document.currentScript: its tag is found by the attribute it carries
import {modebarClearance, NARROW, narrowLayout} from "./chart_layout.js";

var tag = document.querySelector("script[data-plotly]");
var plotlyUrl = tag && tag.dataset.plotly;
var dark = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

function cssColour(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// Layout changes that make a figure readable on the page's background: transparent paper and
// plot, the page's text colour, grid and axis lines in its line colour. Light: as built.
function themeUpdate(layout) {
  if (!dark || !dark.matches) return null;
  var fg = cssColour("--fg"), line = cssColour("--line"), muted = cssColour("--muted");
  var update = {
    paper_bgcolor: "rgba(0,0,0,0)",
    plot_bgcolor: "rgba(0,0,0,0)",
    "font.color": fg,
    "legend.font.color": fg,
    "title.font.color": fg,
  };
  var axes = Object.keys(layout || {}).filter(function (key) { return /^[xy]axis\d*$/.test(key); });
  if (axes.indexOf("xaxis") < 0) axes.push("xaxis");
  if (axes.indexOf("yaxis") < 0) axes.push("yaxis");
  axes.forEach(function (axis) {
    update[axis + ".gridcolor"] = line;
    update[axis + ".linecolor"] = muted;
    update[axis + ".zerolinecolor"] = muted;
    update[axis + ".tickfont.color"] = fg;
    update[axis + ".title.font.color"] = fg;
  });
  return update;
}

var CONFIG = {responsive: true, displaylogo: false};
var PLOTLY_HEIGHT = 450; // plotly's own height of a figure that sets none

function figureOf(div) {
  var source = document.getElementById(div.dataset.chart);
  return source ? JSON.parse(source.textContent) : null;
}

// The figure as built with the colour scheme's changes (Plotly.react redraws in place).
function render(div, figure) {
  var layout = figure.layout || {};
  var update = themeUpdate(layout);
  Object.keys(update || {}).forEach(function (path) {
    var keys = path.split("."), node = layout;
    keys.slice(0, -1).forEach(function (key) {
      if (typeof node[key] === "string") node[key] = {text: node[key]};  // a title
      else if (typeof node[key] !== "object" || node[key] === null) node[key] = {};
      node = node[key];
    });
    node[keys[keys.length - 1]] = update[path];
  });
  var width = div.clientWidth || window.innerWidth;
  layout = narrowLayout(layout, figure.data, width, PLOTLY_HEIGHT);
  // on a phone the toolbar would sit over the legend and the plot: the gestures do without it
  var config = width < NARROW ? Object.assign({}, CONFIG, {displayModeBar: false}) : CONFIG;
  Plotly.react(div, figure.data, layout, config).then(function () { clearModebar(div); });
}

// On a wide screen the toolbar shows at the figure's top right: a legend that reaches it moves
// down with the plot, out from under it.
function clearModebar(div) {
  var bar = div.querySelector(".modebar"), legend = div.querySelector(".legend");
  if (!bar || !legend || !div._fullLayout) return;
  var extra = modebarClearance(bar.getBoundingClientRect(), legend.getBoundingClientRect());
  if (extra > 0) Plotly.relayout(div, {"margin.t": div._fullLayout._size.t + extra});
}

function draw() {
  document.querySelectorAll("[data-chart]").forEach(function (div) {
    var figure = figureOf(div);
    if (!figure || div.dataset.drawn) return;
    div.dataset.drawn = "1";
    render(div, figure);
    div.dispatchEvent(new CustomEvent("chart-drawn")); // for a page's own module (timeline.js)
    div.on("plotly_click", function (event) {
      var point = event.points && event.points[0];
      var url = point && point.customdata;
      if (Array.isArray(url)) url = url[0];
      if (typeof url === "string" && url.charAt(0) === "/") window.location.href = url;
    });
  });
}

var loading = false;
function drawWhenLoaded() {
  if (window.Plotly) return draw();
  if (loading || !plotlyUrl) return;
  loading = true;
  var script = document.createElement("script");
  script.src = plotlyUrl;
  script.onload = draw;
  document.head.appendChild(script);
}

if (dark && dark.addEventListener) {
  dark.addEventListener("change", function () {
    if (!window.Plotly) return;
    document.querySelectorAll("[data-chart][data-drawn]").forEach(function (div) {
      render(div, figureOf(div));
    });
  });
}
// A module script, like a deferred one, runs before DOMContentLoaded: plotly is run after it, never before.
if (document.readyState === "complete") drawWhenLoaded();
else document.addEventListener("DOMContentLoaded", function () { setTimeout(drawWhenLoaded, 0); });
