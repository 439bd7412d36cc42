// The diff call tree, on the shared lazy tree (tree.js):
// children of a node come from /api/v1/diff/calltree, largest change first, with base, target
// and change columns, grown rows marked apart from shrunk ones. The path of the largest change
// is opened on load. "Involves symbol" (the bar's search, shared with the flame graph) keeps the
// paths through matching frames, marks the matches and opens the largest path to one; it goes
// in the query string (`search=`) like the tree's other options. Everything from the server is
// set as text, never as HTML. While tasks build call trees too large to build in a request, a
// progress bar shows how far they are (pending.js).
import {setFilters} from "./mining.js";
import {getJSON, Progress} from "./pending.js";
import {frameNotes, readHash, Tree, writeHash} from "./tree.js";
import {formatBytes, formatCount} from "./units.js"; // 17,862 and -1,323.9, as the tables

const AUTO_OPEN_DEPTH = 40;

function signed(text, n) { return (n > 0 ? "+" : "") + text; }
// each change coloured by its own sign (a count can grow while the bytes shrink), only where the
// rank test tells the sides apart: a change it does not is shown uncoloured
function signClass(n, significant) {
  if (!significant) return "";
  return n > 0 ? " grow" : n < 0 ? " shrink" : "";
}
// a side's figure is its median per snapshot; the mean goes in the tooltip
function sideTitle(count, mean) {
  return formatCount(count) + " allocations" + (mean === undefined ? "" : "; mean " + formatBytes(mean));
}

// the tooltip's words: the status, and the rank test's p where there is one
function statusWords(item) {
  var words = item.status === "changed" ? "changed, not significant" : item.status;
  return item.p_value === null || item.p_value === undefined ? words : words + " (p " + item.p_value.toPrecision(2) + ")";
}

function cell(className, text, title) {
  var span = document.createElement("span");
  span.className = className;
  span.textContent = text;
  if (title) span.title = title;
  return span;
}

function renderRow(item, node, tree) {
  var row = document.createElement("div");
  row.className = "row " + (item.significant ? item.status : "untested") + (item.system ? " system" : "") +
    (item.match ? " match" : "");
  var label = document.createElement("span");
  label.className = "symbol";
  var toggle = tree.toggle(node);
  toggle.disabled = !item.has_children;
  label.appendChild(toggle);
  // file:line and the inlined mark, as the call tree shows them (tree.js)
  var notes = frameNotes(item, {inlined: "frame-note inlined", file: "frame-note file"});
  label.appendChild(cell("name", item.symbol, item.symbol + notes.title + (item.image ? " (" + item.image + ")" : "")));
  notes.spans.forEach(function (span) { label.appendChild(span); });
  if (item.image) label.appendChild(cell("image", item.image));
  row.appendChild(label);
  row.appendChild(cell("num", formatBytes(item.base_bytes), sideTitle(item.base_count, item.base_mean_bytes)));
  row.appendChild(cell("num", formatBytes(item.target_bytes), sideTitle(item.target_count, item.target_mean_bytes)));
  row.appendChild(cell("num delta" + signClass(item.delta_bytes, item.significant), signed(formatBytes(item.delta_bytes), item.delta_bytes),
    statusWords(item) + (item.delta_mean_bytes === undefined ? "" : "; mean " + signed(formatBytes(item.delta_mean_bytes), item.delta_mean_bytes))));
  row.appendChild(cell("num delta" + signClass(item.delta_count, item.significant), signed(formatCount(item.delta_count), item.delta_count)));
  return row;
}

function renderMore(left) {
  var li = document.createElement("li");
  li.className = "more-item";
  var button = document.createElement("button");
  button.type = "button";
  button.className = "more link";
  button.textContent = "show more (" + left + " left)";
  li.appendChild(button);
  return {element: li, button: button};
}

function DiffTree(root, config) {
  this.root = root;
  this.config = config;
  this.level = root.querySelector(".difftree-level");
  var self = this;
  var bar = root.previousElementSibling; // .difftree-bar
  this.search = bar && bar.querySelector(".difftree-search");
  if (this.search) {
    var typing = null;
    this.search.addEventListener("input", function () {
      clearTimeout(typing);
      typing = setTimeout(function () { self.setSearch(self.search.value.trim()); }, 350);
    });
  }
  this.tree = new Tree({
    container: this.level,
    onChange: function () { self.changed(); },
    nodeTag: "li",
    groupTag: "ul",
    classes: {row: "row", group: "difftree-children", toggle: "toggle"},
    idKey: "node",
    labels: {expand: "expand", collapse: "collapse"},
    fetchPage: function (node, offset) { return self.fetchPage(node, offset); },
    renderRow: renderRow,
    renderMore: renderMore,
    onError: function (error) { self.showError(error); },
  });
}

DiffTree.prototype.url = function (node, offset) {
  var params = new URLSearchParams({
    base: this.config.base, target: this.config.target,
    lifespan: this.config.lifespan || "persistent", offset: String(offset || 0)
  });
  if (this.config.app) params.set("app", String(this.config.app));
  setFilters(params, this.config.filters);
  if (node !== null && node !== undefined) params.set("node", node);
  return this.config.url + "?" + params.toString();
};

// `waiting`: pending.js's options while tasks build the trees (progress, still wanted)
DiffTree.prototype.fetch = function (node, offset, waiting) {
  return getJSON(this.url(node, offset), waiting).catch(function (error) {
    throw new Error("diff call tree: " + error.message);
  });
};

// A page as the tree wants it: the nodes, and how many are left after them.
DiffTree.prototype.fetchPage = function (node, offset) {
  return this.fetch(node, offset).then(function (data) {
    return {items: data.nodes, left: data.total - (data.offset + data.nodes.length)};
  });
};

// Open the first child (the largest change) level after level.
DiffTree.prototype.openLargest = function (ul, depth) {
  var first = ul && ul.querySelector(":scope > li[data-node]");
  if (!first || depth >= AUTO_OPEN_DEPTH) return;
  var toggle = first.querySelector(":scope > .row .toggle");
  if (toggle.disabled) return;
  var self = this;
  this.tree.expand(first).then(function (child) { self.openLargest(child, depth + 1); })
    .catch(function (error) { self.showError(error); });
};

// The opened nodes and the selection in the hash (tree.js): a reload opens the same path.
DiffTree.prototype.changed = function () {
  if (!this.root.dataset.ready) return;
  var state = this.tree.state();
  writeHash({view: this.root.dataset.view || "", open: state.open, sel: state.sel});
};

// A new search: the query string keeps it (a reload or a shared link searches again, the
// options form sends it along), and the tree is loaded again from its roots. A searched tree
// names its nodes otherwise, so the opened path and the selection start over.
DiffTree.prototype.setSearch = function (text) {
  var filters = this.config.filters = this.config.filters || {};
  if ((filters.search || "") === text) return;
  filters.search = text;
  var url = new URL(window.location.href);
  if (text) url.searchParams.set("search", text);
  else url.searchParams.delete("search");
  window.history.replaceState(null, "", url.pathname + url.search + url.hash);
  var form = document.getElementById("difftree-controls");
  var kept = form && form.querySelector("input[type=hidden][name=search]");
  if (form && !kept) {
    kept = document.createElement("input");
    kept.type = "hidden";
    kept.name = "search";
    form.appendChild(kept);
  }
  if (kept) kept.value = text;
  writeHash({view: this.root.dataset.view || "", open: [], sel: ""});
  this.reload();
};

DiffTree.prototype.reload = function () {
  this.tree.reset();
  this.level.textContent = "";
  delete this.root.dataset.ready;
  this.root.querySelectorAll(":scope > p.error").forEach(function (p) { p.remove(); });
  return this.load();
};

DiffTree.prototype.showError = function (error) {
  var p = document.createElement("p");
  p.className = "error";
  p.textContent = error.message;
  this.root.appendChild(p);
};

DiffTree.prototype.load = function () {
  var self = this;
  var generation = this.tree.generation;
  if (!this.progress) this.progress = new Progress(this.root, this.level);
  return this.fetch(null, 0, {
    isCurrent: function () { return self.tree.isCurrent(generation); },
    onProgress: function (state) { self.progress.show(state, "Building the call trees"); },
  }).then(function (data) {
    if (!data) return null;
    self.progress.hide();
    var left = data.total - (data.offset + data.nodes.length);
    self.tree.append(self.level, null, data.nodes, left, 0, data.nodes.length);
    var empty = self.root.querySelector(".difftree-empty");
    if (empty) {
      var search = (self.config.filters || {}).search;
      empty.textContent = search ? "No call stacks through “" + search + "” on either side." :
        "No call stacks on either side.";
      empty.hidden = data.total > 0;
    }
    var saved = readHash();
    if (!saved.open.length) {
      self.root.dataset.ready = "1";
      self.openLargest(self.level, 0);
      return null;
    }
    return self.tree.openIds(saved.open).then(function () {
      self.tree.selectId(saved.sel, false);
      self.root.dataset.ready = "1";
      self.changed();
    });
  }).catch(function (error) { self.progress.hide(); self.showError(error); });
};

// Start every diff tree of the page (.difftree[data-config]: its options in a JSON script).
export function startDiffTrees() {
  document.querySelectorAll(".difftree[data-config]").forEach(function (root) {
    var source = document.getElementById(root.dataset.config);
    if (!source || root.dataset.started) return;
    root.dataset.started = "1";
    new DiffTree(root, JSON.parse(source.textContent)).load();
  });
}
