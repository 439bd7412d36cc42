// Flame graphs (icicles: the root on top, each node as wide as its bytes) of a call tree
// (calltree_views.js) or a diff tree (diffflame.js), from the columns the server sends pruned to
// what can be seen: ids, labels, parents, values (branchvalues "total": a node's value holds its
// children's; "remainder": a node's value is what it has beyond them), kinds, images, system,
// match, and for a diff base, target and delta.
//
// Drawn on a <canvas> here rather than by plotly's icicle trace: plotly takes 0.6 to 1.5 s for
// the 3,000 nodes of a pruned tree where the canvas takes a few milliseconds (see "Flame graphs"
// in docs/performance.md), and the page loads no 4.6 MiB bundle for it. Hovering a node shows its
// figures; clicking one asks the widget to focus on it (onFocus(id, kind, isTop)).
//
//   var flame = new memdashFlame.Flame(element, {onFocus: function (id, kind, isTop) {}});
//   flame.draw(data)   // -> Promise; element.dataset.drawMs: how long the layout and drawing took
//
// Labels are drawn as canvas text (never HTML); the tooltip is set with textContent.
(function () {
  "use strict";
  var formatBytes = window.memdashUnits.formatBytes;
  var formatCount = window.memdashUnits.formatCount;
  var PALETTE = ["#9bbcf0", "#f2b48a", "#a8d8a0", "#e6a8d6", "#f0d98c", "#9fd6d6", "#c9b4ef",
    "#f0a3a3", "#c4d88f", "#b9c3cf"];
  var SYSTEM = "#d4d4d4", OTHER = "#ececec", MATCH = "#ff8c1a", DIM = "#e4e9f0";
  var ROW = 20, FONT = "11px system-ui, -apple-system, Segoe UI, sans-serif", MIN_TEXT = 28;

  function cssColour(name, fallback) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
  }

  function hash(text) {
    var h = 0;
    for (var i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) | 0;
    return Math.abs(h);
  }

  function mix(a, b, t) { // two #rrggbb colours, t from 0 (a) to 1 (b)
    var out = "#";
    for (var i = 1; i < 7; i += 2) {
      var x = parseInt(a.slice(i, i + 2), 16), y = parseInt(b.slice(i, i + 2), 16);
      out += ("0" + Math.round(x + (y - x) * t).toString(16)).slice(-2);
    }
    return out;
  }

  function dark(colour) {
    var r = parseInt(colour.slice(1, 3), 16), g = parseInt(colour.slice(3, 5), 16);
    var b = parseInt(colour.slice(5, 7), 16);
    return 0.299 * r + 0.587 * g + 0.114 * b < 140;
  }

  // A call tree: a colour per library (system ones grey); with a search, matches stand out. A
  // diff: its change, shrink blue, growth red, white for none.
  function colours(data) {
    if (data.delta) {
      var most = 1;
      data.delta.forEach(function (d) { most = Math.max(most, Math.abs(d)); });
      return data.delta.map(function (d, i) {
        if (data.kinds[i] === "other") return OTHER;
        var t = Math.min(1, Math.abs(d) / most);
        return d < 0 ? mix("#f7f7f7", "#2166ac", t) : mix("#f7f7f7", "#b2182b", t);
      });
    }
    var searching = data.match.some(Boolean);
    return data.ids.map(function (_, i) {
      var kind = data.kinds[i];
      if (searching && kind !== "all") return data.match[i] ? MATCH : DIM;
      if (kind === "other" || kind === "all") return OTHER;
      if (data.system && data.system[i]) return SYSTEM;
      return PALETTE[hash(data.images[i] || kind) % PALETTE.length];
    });
  }

  // Each node's box in units of the width (x0, x1 from 0 to 1) and its depth, parents first.
  function layout(data) {
    var n = data.ids.length, index = {}, children = [], roots = [], i;
    for (i = 0; i < n; i++) { index[data.ids[i]] = i; children.push([]); }
    for (i = 0; i < n; i++) {
      var parent = data.parents[i];
      if (parent === "" || !(parent in index)) roots.push(i);
      else children[index[parent]].push(i);
    }
    var size = data.values.slice();
    if (data.branchvalues === "remainder") { // children come after their parent: sum backwards
      for (i = n - 1; i >= 0; i--) {
        if (data.parents[i] in index) size[index[data.parents[i]]] += size[i];
      }
    }
    var x0 = new Float64Array(n), x1 = new Float64Array(n), depth = new Int32Array(n);
    var total = 0;
    roots.forEach(function (r) { total += size[r]; });
    var queue = [], at = 0;
    roots.forEach(function (r) {
      x0[r] = at; at += total ? size[r] / total : 1 / roots.length; x1[r] = at;
      queue.push(r);
    });
    var deepest = 0;
    for (var q = 0; q < queue.length; q++) {
      var node = queue[q], span = x1[node] - x0[node], left = x0[node];
      var inside = size[node] || 1;
      children[node].forEach(function (c) {
        depth[c] = depth[node] + 1;
        if (depth[c] > deepest) deepest = depth[c];
        x0[c] = left; left += span * size[c] / inside; x1[c] = left;
        queue.push(c);
      });
    }
    return {x0: x0, x1: x1, depth: depth, levels: deepest + 1, order: queue};
  }

  function hoverText(data, i) {
    var lines = [data.labels[i]];
    if (data.delta) {
      var d = data.delta[i];
      lines.push("base " + formatBytes(data.base[i]) + " → target " + formatBytes(data.target[i]));
      lines.push("Δ " + (d > 0 ? "+" : "") + formatBytes(d));
    } else {
      var unit = data.unit === "count" ? formatCount : formatBytes;
      var root = data.values[0] || 1;
      lines.push(unit(data.values[i]) + " · " + (100 * data.values[i] / root).toFixed(2) + " %");
    }
    if (data.images[i]) lines.push(data.images[i]);
    if (data.kinds[i] === "other") lines.push("the lightest nodes here, merged");
    return lines.join("\n");
  }

  function Flame(element, options) {
    this.element = element;
    this.options = options || {};
    element.memdashFlame = this;
    this.canvas = document.createElement("canvas");
    this.canvas.className = "flame-canvas";
    this.tip = document.createElement("div");
    this.tip.className = "flame-tip";
    this.tip.hidden = true;
    element.textContent = "";
    element.style.position = "relative";
    element.appendChild(this.canvas);
    element.appendChild(this.tip);
    var self = this;
    this.canvas.addEventListener("mousemove", function (event) { self.hover(event); });
    this.canvas.addEventListener("mouseleave", function () { self.tip.hidden = true; });
    this.canvas.addEventListener("click", function (event) { self.click(event); });
    if (window.ResizeObserver) {
      var width = 0;
      new ResizeObserver(function () {
        if (self.data && element.clientWidth !== width) {
          width = element.clientWidth;
          self.paint();
        }
      }).observe(element);
    }
  }

  Flame.prototype.draw = function (data) {
    var started = performance.now();
    this.data = data;
    this.boxes = layout(data);
    this.fills = colours(data);
    this.paint();
    var element = this.element;
    element.dataset.drawMs = String(Math.round(performance.now() - started));
    element.dataset.nodes = String(data.ids.length);
    element.dataset.ready = "1";
    element.setAttribute("aria-label", "Flame graph of " + data.labels[0] + ": " +
      data.ids.length + " nodes; the same tree is in the tree view");
    return Promise.resolve();
  };

  Flame.prototype.paint = function () {
    var data = this.data, boxes = this.boxes, canvas = this.canvas;
    var width = this.element.clientWidth || 800;
    var height = boxes.levels * ROW;
    var ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    var ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = FONT;
    ctx.textBaseline = "middle";
    var charWidth = ctx.measureText("abcdefghijklmnopqrstuvwxyz").width / 26;
    for (var k = 0; k < boxes.order.length; k++) {
      var i = boxes.order[k];
      var x = boxes.x0[i] * width, w = (boxes.x1[i] - boxes.x0[i]) * width;
      if (w < 0.3) continue;
      var y = boxes.depth[i] * ROW;
      ctx.fillStyle = this.fills[i];
      ctx.fillRect(x, y, Math.max(w - 0.5, 0.3), ROW - 1);
      if (w < MIN_TEXT) continue;
      var room = Math.floor((w - 6) / charWidth);
      var label = data.labels[i];
      if (label.length > room) label = room > 1 ? label.slice(0, room - 1) + "…" : "";
      if (!label) continue;
      ctx.fillStyle = dark(this.fills[i]) ? "#ffffff" : "#1d1d1f";
      ctx.fillText(label, x + 3, y + ROW / 2);
    }
  };

  // The node under a point of the canvas (its index), or -1.
  Flame.prototype.at = function (event) {
    var rect = this.canvas.getBoundingClientRect();
    var x = (event.clientX - rect.left) / rect.width, level = Math.floor((event.clientY - rect.top) / ROW);
    var boxes = this.boxes;
    if (!boxes) return -1;
    for (var k = 0; k < boxes.order.length; k++) {
      var i = boxes.order[k];
      if (boxes.depth[i] === level && boxes.x0[i] <= x && x < boxes.x1[i]) return i;
    }
    return -1;
  };

  Flame.prototype.hover = function (event) {
    var i = this.at(event);
    if (i < 0) { this.tip.hidden = true; return; }
    this.tip.textContent = hoverText(this.data, i);
    this.tip.hidden = false;
    var rect = this.element.getBoundingClientRect();
    var left = event.clientX - rect.left + 12, top = event.clientY - rect.top + 14;
    this.tip.style.left = Math.max(0, Math.min(left, rect.width - this.tip.offsetWidth)) + "px";
    this.tip.style.top = top + "px";
    this.canvas.style.cursor = this.data.kinds[i] === "other" ? "default" : "pointer";
  };

  Flame.prototype.click = function (event) {
    var i = this.at(event);
    if (i < 0 || this.data.kinds[i] === "other" || !this.options.onFocus) return;
    this.options.onFocus(this.data.ids[i], this.data.kinds[i], i === 0);
  };

  // Where a node is drawn (in CSS pixels of the element), by label: for tests and tools.
  Flame.prototype.boxOf = function (label) {
    var i = this.data ? this.data.labels.indexOf(label) : -1;
    if (i < 0) return null;
    var width = this.element.clientWidth;
    return {x: this.boxes.x0[i] * width, width: (this.boxes.x1[i] - this.boxes.x0[i]) * width,
      y: this.boxes.depth[i] * ROW, height: ROW, depth: this.boxes.depth[i], id: this.data.ids[i]};
  };

  window.memdashFlame = {Flame: Flame, layout: layout};
})();
