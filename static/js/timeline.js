// The snapshot page's timeline: a range dragged across the chart (plotly's horizontal select,
// set by the figure) opens the page for the allocations made in it (?from_ms=&to_ms=, whole
// time buckets, or a massif run's snapshots in it: timeline_range.js). charts.js draws the chart.
import {snapRange, snapToPoints, withRange} from "./timeline_range.js";

const section = document.getElementById("timeline");
const chart = document.getElementById("timeline-chart");

function buckets() {
  return {
    startMs: Number(section.dataset.startMs),
    bucketMs: Number(section.dataset.bucketMs),
    count: Number(section.dataset.buckets),
  };
}

function listen() {
  if (!chart || chart.dataset.rangeListening || typeof chart.on !== "function") return;
  chart.dataset.rangeListening = "1";
  chart.on("plotly_selected", function (event) {
    const x = event && event.range && event.range.x;
    if (!x) return;
    const points = section.dataset.points; // a massif run: its snapshots' times
    const range = points
      ? snapToPoints(x[0], x[1], JSON.parse(points))
      : snapRange(x[0], x[1], buckets());
    if (range) window.location.search = withRange(window.location.search, range);
  });
}

if (section && chart) {
  chart.addEventListener("chart-drawn", listen);
  listen(); // drawn before this ran
}
