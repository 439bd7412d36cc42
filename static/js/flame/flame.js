// Flame graphs (icicles: the root on top, each node as wide as its bytes) of a call tree
// (calltree_views.js) or a diff tree (diffflame.js), from the columns the server sends pruned to
// what can be seen: ids, labels, parents, values, branchvalues, kinds, images, system, match, and
// for a diff base, target and delta. This is the widget (the canvas, the tooltip, the mouse);
// the geometry is layout.js, the colours colours.js, the words text.js, the drawing paint.js.
//
// Drawn on a <canvas> here rather than by plotly's icicle trace: plotly takes 0.6 to 1.5 s for
// the 3,000 nodes of a pruned tree where the canvas takes a few milliseconds (see "Flame graphs"
// in docs/performance.md), and the page loads no 4.6 MiB bundle for it. Hovering a node shows its
// figures; clicking one asks the widget to focus on it (onFocus(id, kind, isTop)). With
// {flip: true} the root is drawn at the bottom (a sandwich's callers).
//
//   import {Flame} from "./flame/flame.js";
//   const flame = new Flame(element, {onFocus(id, kind, isTop) {}});
//   flame.draw(data)   // -> Promise; element.dataset.drawMs: how long the layout and drawing took
//
// The tooltip is set with textContent (labels are user data). element.memdashFlame is the widget
// (tests and tools ask it where a node is drawn: boxOf).
import {colours} from "./colours.js";
import {layout, nodeAt} from "./layout.js";
import {paint, ROW} from "./paint.js";
import {hoverText} from "./text.js";

export class Flame {
  constructor(element, options) {
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
    this.canvas.addEventListener("mousemove", (event) => this.hover(event));
    this.canvas.addEventListener("mouseleave", () => { this.tip.hidden = true; });
    this.canvas.addEventListener("click", (event) => this.click(event));
    if (window.ResizeObserver) {
      let width = 0;
      new ResizeObserver(() => {
        if (this.data && element.clientWidth !== width) {
          width = element.clientWidth;
          this.paint();
        }
      }).observe(element);
    }
  }

  draw(data) {
    const started = performance.now();
    this.data = data;
    this.boxes = layout(data, this.options.flip);
    this.fills = colours(data);
    this.paint();
    const element = this.element;
    element.dataset.drawMs = String(Math.round(performance.now() - started));
    element.dataset.nodes = String(data.ids.length);
    element.dataset.ready = "1";
    element.setAttribute("aria-label", "Flame graph of " + data.labels[0] + ": " +
      data.ids.length + " nodes; the same tree is in the tree view");
    return Promise.resolve();
  }

  // Size the canvas to the element (sharp on a high-density screen) and paint it.
  paint() {
    const canvas = this.canvas;
    const width = this.element.clientWidth || 800;
    const height = this.boxes.levels * ROW;
    const ratio = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    canvas.style.width = width + "px";
    canvas.style.height = height + "px";
    paint(canvas.getContext("2d"),
      {labels: this.data.labels, boxes: this.boxes, fills: this.fills, width, ratio});
  }

  // The node under a point of the canvas (its index), or -1.
  at(event) {
    if (!this.boxes) return -1;
    const rect = this.canvas.getBoundingClientRect();
    const x = (event.clientX - rect.left) / rect.width;
    return nodeAt(this.boxes, x, Math.floor((event.clientY - rect.top) / ROW));
  }

  hover(event) {
    const i = this.at(event);
    if (i < 0) { this.tip.hidden = true; return; }
    this.tip.textContent = hoverText(this.data, i);
    this.tip.hidden = false;
    const rect = this.element.getBoundingClientRect();
    const left = event.clientX - rect.left + 12, top = event.clientY - rect.top + 14;
    this.tip.style.left = Math.max(0, Math.min(left, rect.width - this.tip.offsetWidth)) + "px";
    this.tip.style.top = top + "px";
    this.canvas.style.cursor = this.data.kinds[i] === "other" ? "default" : "pointer";
  }

  click(event) {
    const i = this.at(event);
    if (i < 0 || this.data.kinds[i] === "other" || !this.options.onFocus) return;
    this.options.onFocus(this.data.ids[i], this.data.kinds[i], i === 0);
  }

  // Where a node is drawn (in CSS pixels of the element), by label: for tests and tools.
  boxOf(label) {
    const i = this.data ? this.data.labels.indexOf(label) : -1;
    if (i < 0) return null;
    const width = this.element.clientWidth;
    const boxes = this.boxes;
    return {x: boxes.x0[i] * width, width: (boxes.x1[i] - boxes.x0[i]) * width,
      y: boxes.depth[i] * ROW, height: ROW, depth: boxes.depth[i], id: this.data.ids[i]};
  }
}
