// The diff call tree: children of a node are fetched from /api/v1/diff/calltree when it is
// expanded, largest change first, grown rows marked apart from shrunk ones. The path of the
// largest change is opened on load. Everything from the server is set as text, never as HTML.
(function () {
  "use strict";
  var UNITS = [["GiB", 1073741824], ["MiB", 1048576], ["KiB", 1024]];
  var AUTO_OPEN_DEPTH = 40;

  function formatBytes(n) {
    var sign = n < 0 ? "-" : "";
    var abs = Math.abs(n);
    for (var i = 0; i < UNITS.length; i++) {
      if (abs >= UNITS[i][1]) return sign + (abs / UNITS[i][1]).toFixed(2) + " " + UNITS[i][0];
    }
    return sign + Math.round(abs) + " Bytes";
  }

  // Counts as the tables print them (the `intcomma` and `signed` filters): 17,862 and -1,323.9.
  function formatCount(n) { return Number(n).toLocaleString("en-US", {maximumFractionDigits: 1}); }

  function signed(text, n) { return (n > 0 ? "+" : "") + text; }

  function cell(className, text, title) {
    var span = document.createElement("span");
    span.className = className;
    span.textContent = text;
    if (title) span.title = title;
    return span;
  }

  function DiffTree(root, config) {
    this.root = root;
    this.config = config;
    this.level = root.querySelector(".difftree-level");
  }

  DiffTree.prototype.url = function (node, offset) {
    var params = new URLSearchParams({
      base: this.config.base, target: this.config.target,
      lifespan: this.config.lifespan || "persistent", offset: String(offset || 0)
    });
    if (this.config.app) params.set("app", String(this.config.app));
    var filters = this.config.filters || {};
    Object.keys(filters).forEach(function (key) { if (filters[key]) params.set(key, filters[key]); });
    if (node !== null && node !== undefined) params.set("node", node);
    return this.config.url + "?" + params.toString();
  };

  DiffTree.prototype.fetch = function (node, offset) {
    return fetch(this.url(node, offset), {credentials: "same-origin", headers: {Accept: "application/json"}})
      .then(function (response) {
        if (!response.ok) throw new Error("diff call tree: HTTP " + response.status);
        return response.json();
      });
  };

  DiffTree.prototype.renderNode = function (item) {
    var li = document.createElement("li");
    li.setAttribute("role", "treeitem");
    li.dataset.node = item.id;
    var row = document.createElement("div");
    row.className = "row " + item.status + (item.system ? " system" : "");
    var label = document.createElement("span");
    label.className = "symbol";
    var toggle = document.createElement("button");
    toggle.type = "button";
    toggle.className = "toggle";
    toggle.textContent = "▸";
    toggle.setAttribute("aria-label", "expand");
    toggle.disabled = !item.has_children;
    label.appendChild(toggle);
    label.appendChild(cell("name", item.symbol, item.image));
    row.appendChild(label);
    row.appendChild(cell("num", formatBytes(item.base_bytes), formatCount(item.base_count) + " allocations"));
    row.appendChild(cell("num", formatBytes(item.target_bytes), formatCount(item.target_count) + " allocations"));
    row.appendChild(cell("num delta", signed(formatBytes(item.delta_bytes), item.delta_bytes), item.status));
    row.appendChild(cell("num delta", signed(formatCount(item.delta_count), item.delta_count)));
    li.appendChild(row);
    var self = this;
    toggle.addEventListener("click", function () { self.toggle(li); });
    return li;
  };

  DiffTree.prototype.append = function (ul, node, data) {
    var self = this;
    var more = ul.querySelector(":scope > li.more-item");
    if (more) more.remove();
    data.nodes.forEach(function (item) { ul.appendChild(self.renderNode(item)); });
    var shown = data.offset + data.nodes.length;
    if (shown < data.total) {
      var li = document.createElement("li");
      li.className = "more-item";
      var button = document.createElement("button");
      button.type = "button";
      button.className = "more link";
      button.textContent = "show more (" + (data.total - shown) + " left)";
      button.addEventListener("click", function () {
        self.fetch(node, shown).then(function (next) { self.append(ul, node, next); });
      });
      li.appendChild(button);
      ul.appendChild(li);
    }
  };

  DiffTree.prototype.expand = function (li) {
    var self = this;
    var toggle = li.querySelector(":scope > .row .toggle");
    var ul = li.querySelector(":scope > ul");
    if (ul) {
      ul.hidden = false;
    } else {
      ul = document.createElement("ul");
      ul.setAttribute("role", "group");
      li.appendChild(ul);
    }
    toggle.textContent = "▾";
    toggle.setAttribute("aria-label", "collapse");
    li.setAttribute("aria-expanded", "true");
    if (li.dataset.loaded) return Promise.resolve(ul);
    li.dataset.loaded = "1";
    return this.fetch(li.dataset.node, 0).then(function (data) {
      self.append(ul, li.dataset.node, data);
      return ul;
    });
  };

  DiffTree.prototype.toggle = function (li) {
    if (li.getAttribute("aria-expanded") === "true") {
      li.querySelector(":scope > ul").hidden = true;
      li.setAttribute("aria-expanded", "false");
      var toggle = li.querySelector(":scope > .row .toggle");
      toggle.textContent = "▸";
      toggle.setAttribute("aria-label", "expand");
      return Promise.resolve(null);
    }
    return this.expand(li);
  };

  // Open the first child (the largest change) level after level.
  DiffTree.prototype.openLargest = function (ul, depth) {
    var first = ul.querySelector(":scope > li[data-node]");
    if (!first || depth >= AUTO_OPEN_DEPTH) return;
    var toggle = first.querySelector(":scope > .row .toggle");
    if (toggle.disabled) return;
    var self = this;
    this.expand(first).then(function (child) { self.openLargest(child, depth + 1); });
  };

  DiffTree.prototype.load = function () {
    var self = this;
    return this.fetch(null, 0).then(function (data) {
      self.append(self.level, null, data);
      var empty = self.root.querySelector(".difftree-empty");
      if (empty) empty.hidden = data.total > 0;
      self.root.dataset.ready = "1";
      self.openLargest(self.level, 0);
    }).catch(function (error) {
      var p = document.createElement("p");
      p.className = "error";
      p.textContent = error.message;
      self.root.appendChild(p);
    });
  };

  function start() {
    document.querySelectorAll(".difftree[data-config]").forEach(function (root) {
      var source = document.getElementById(root.dataset.config);
      if (!source || root.dataset.started) return;
      root.dataset.started = "1";
      new DiffTree(root, JSON.parse(source.textContent)).load();
    });
  }

  window.memdashFormatBytes = window.memdashFormatBytes || formatBytes;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
