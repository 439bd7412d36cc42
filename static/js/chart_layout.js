// How a figure's layout fits a narrow screen (pure: plain data in and out; charts.js applies it).
// On a phone a legend beside the plot leaves the plot a sliver: it goes above the plot (below, it
// would meet the axis's turned labels and title), one item a row, and the figure grows by those
// rows so that the plot keeps its height.

export const NARROW = 600; // px: a phone's width, portrait
const ROW = 20; // px a legend row takes

// The legend entries plotly draws: traces not hidden from it (a legend group counts once each).
export function legendItems(data) {
  return (data || []).filter((trace) => trace.showlegend !== false && trace.name).length;
}

// The layout to draw at `width`: the same object when nothing changes.
export function narrowLayout(layout, data, width, defaultHeight) {
  const items = legendItems(data);
  if (width >= NARROW || items < 2 || (layout && layout.showlegend === false)) return layout;
  const base = (layout && layout.height) || defaultHeight;
  const margin = Object.assign({}, (layout && layout.margin) || {});
  return Object.assign({}, layout, {
    legend: Object.assign({}, (layout && layout.legend) || {}, {
      orientation: "v", x: 0, xanchor: "left", y: 1.02, yanchor: "bottom",
    }),
    height: base + items * ROW,
    margin: Object.assign(margin, {t: (margin.t || 40) + items * ROW}),
  });
}

// How far the plot (and the legend above it) must move down so that plotly's toolbar, at the
// figure's top right, does not cover the legend: 0 when their boxes ({left, right, top,
// bottom}, px) do not meet, else the overlap and a 4 px gap. A legend wide enough to reach the
// toolbar (many entries, or a half-width chart) would otherwise sit under it.
export function modebarClearance(modebar, legend) {
  if (!modebar || !legend) return 0;
  const across = legend.right > modebar.left && legend.left < modebar.right;
  const down = legend.top < modebar.bottom && legend.bottom > modebar.top;
  return across && down ? Math.ceil(modebar.bottom - legend.top) + 4 : 0;
}
