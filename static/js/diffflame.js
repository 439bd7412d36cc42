// The diff call tree (difftree.js) as a flame graph (flame/flame.js) in one click: the same sides and
// options, from /api/v1/diff/flame, each node as wide as its larger side and coloured by its
// change (shrunk blue, grown red). The search the tree uses ("Involves symbol") keeps the paths
// through a match and marks it; clicking a node focuses on it, drawn below the path from the
// root (as the call tree's flame graph); clicking the top ("All allocations") shows the whole.
// The view goes in the hash with the tree's path (#view=flame).

import {Flame} from "./flame/flame.js";
import {setFilters} from "./mining.js";
import {getJSON, percent} from "./pending.js";
import {readHash, writeHash} from "./tree.js";

function DiffFlame(root, config) {
  this.root = root;
  this.config = config;
  this.focus = "";
  this.bar = root.previousElementSibling; // .difftree-bar
  this.view = root.querySelector(".difftree-flame-view");
  this.note = root.querySelector(".difftree-flame-note");
  this.search = this.bar.querySelector(".difftree-search");
  this.focusLine = this.bar.querySelector(".difftree-focus");
  var self = this;
  this.flame = new Flame(root.querySelector(".difftree-flame"), {
    onFocus: function (id, kind) {
      var focus = kind === "all" ? "" : id;
      if (focus === self.focus) return;
      self.focus = focus;
      self.load();
    },
  });
  this.bar.querySelectorAll(".view-switch button").forEach(function (button) {
    button.addEventListener("click", function () { self.show(button.dataset.view); });
  });
  var typing = null;
  this.search.addEventListener("input", function () { // the tree (difftree.js) searches too
    clearTimeout(typing);
    typing = setTimeout(function () {
      if (self.root.dataset.view === "flame") self.load();
    }, 350);
  });
}

DiffFlame.prototype.url = function () {
  var config = this.config;
  var params = new URLSearchParams({base: config.base, target: config.target,
    lifespan: config.lifespan || "persistent"});
  if (config.app) params.set("app", String(config.app));
  setFilters(params, config.filters);
  var search = this.search.value.trim(); // as typed, over the one the page came with
  params.delete("search");
  if (search) params.set("search", search);
  if (this.focus) params.set("focus", this.focus);
  return this.root.dataset.flame + "?" + params.toString();
};

DiffFlame.prototype.show = function (view) {
  var flame = view === "flame";
  this.root.dataset.view = view;
  this.bar.querySelectorAll(".view-switch button").forEach(function (button) {
    button.setAttribute("aria-pressed", button.dataset.view === view ? "true" : "false");
  });
  this.view.hidden = !flame;
  this.focusLine.hidden = !flame;
  var state = readHash();
  state.view = view;
  writeHash(state);
  if (flame) this.load();
};

DiffFlame.prototype.load = function () {
  var self = this;
  var mine = this.asked = (this.asked || 0) + 1;
  this.note.classList.remove("error");
  this.note.textContent = "Loading the flame graph…";
  // while tasks build the sides' call trees, how far they are (pending.js)
  getJSON(this.url(), {
    isCurrent: function () { return mine === self.asked; },
    onProgress: function (state) {
      self.note.textContent = state.state === "queued" ? "Waiting for a worker to build the call trees"
        : "Building the call trees… " + percent(state) + " %";
    },
  })
    .then(function (data) {
      if (mine !== self.asked || !data) return null;
      self.note.textContent = data.ids.length <= 1 ? "No call stacks on either side." :
        "Each node as wide as its larger side, coloured by its change (shrunk blue, grown red); " +
        "click one to focus on it. " + data.nodes + " nodes drawn.";
      self.showFocus(data);
      return self.flame.draw(data);
    })
    .catch(function (error) {
      self.note.classList.add("error");
      self.note.textContent = "Could not draw the flame graph: " + error.message;
    });
};

DiffFlame.prototype.showFocus = function (data) {
  var self = this;
  this.focusLine.textContent = "";
  if (!this.focus) return;
  var at = data.ids.indexOf(this.focus); // below the path from the root
  var label = at >= 0 ? data.labels[at] : this.focus;
  this.focusLine.appendChild(document.createTextNode("Focused on " + label + " "));
  var back = document.createElement("button");
  back.type = "button";
  back.className = "link";
  back.textContent = "whole tree";
  back.addEventListener("click", function () { self.focus = ""; self.load(); });
  this.focusLine.appendChild(back);
};

// Start the flame view of every diff tree of the page (.difftree[data-flame]).
export function startDiffFlames() {
  document.querySelectorAll(".difftree[data-flame]").forEach(function (root) {
    var source = document.getElementById(root.dataset.config);
    if (!source || root.dataset.flameStarted) return;
    root.dataset.flameStarted = "1";
    var flame = new DiffFlame(root, JSON.parse(source.textContent));
    if (readHash().view === "flame") flame.show("flame");
  });
}
