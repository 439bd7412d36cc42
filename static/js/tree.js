// What the call tree (calltree.js) and the diff tree (difftree.js) share: a tree whose children
// are fetched from the API when a node is opened (never the whole tree), a page at a time with a
// "show more" control, nodes opened and closed with a toggle, and answers to an older set of
// options dropped. Each widget gives its markup and its columns:
//
//   import {Tree} from "./tree.js";
//   new Tree({
//     container,                  // the element with role=tree (keyboard, clicks, lookups)
//     nodeTag, groupTag,          // e.g. "div"/"div" or "li"/"ul"
//     classes: {row, group, toggle}, // of a node's row, its child container, its toggle button
//     idKey,                      // the node's id is in node.dataset[idKey]
//     labels: {expand, collapse}, // the toggle's aria-label
//     loadingClass,               // optional: on a node while its children load
//     fetchPage(nodeId, offset),  // -> Promise of {items, left} (left: children not yet shown)
//     renderRow(item, node, tree),// -> the node's row, built with tree.toggle(node) if it opens
//     renderMore(left, depth),    // -> {element, button} of the "show more" control
//     onActivate(node),           // optional: Enter on a node (default: open or close it)
//     onChange(tree),             // optional: a node was opened, closed or selected
//     onError(error),             // optional
//   })
//
// Keyboard, as the WAI-ARIA tree pattern: Up/Down move, Right opens (or goes to the first child),
// Left closes (or goes to the parent), Home/End, Enter activates; one node is in the tab order at
// a time (roving tabindex) and carries aria-selected; every node has aria-level.
// The opened nodes and the selection go in the address (`#open=<ids>&sel=<id>`, readHash and
// writeHash over tree_state.js), so a reload or a shared link opens the same path.
//
// `frameNotes(item, classes)`: the inlined mark and `file:line` a frame's row shows by its name.
//
// Everything from the server is set as text (textContent), never as HTML: symbols are user data.
import {formatHash, parseHash} from "./tree_state.js";

export function Tree(options) {
  this.options = options;
  this.generation = 0; // bumped by reset(): answers fetched before it are dropped
  this.selected = null;
  this.container = options.container;
  if (this.container) this.attach(this.container);
}

Tree.prototype.reset = function () {
  this.generation += 1;
  this.selected = null;
};

Tree.prototype.isCurrent = function (generation) {
  return generation === this.generation;
};

Tree.prototype.idOf = function (node) {
  return node.dataset[this.options.idKey];
};

// A node: its element (role treeitem, id and depth in data attributes) with its row.
Tree.prototype.node = function (item, depth) {
  var node = document.createElement(this.options.nodeTag);
  node.setAttribute("role", "treeitem");
  node.setAttribute("aria-level", String(depth + 1));
  node.setAttribute("aria-selected", "false");
  node.tabIndex = -1;
  node.dataset[this.options.idKey] = item.id;
  node.dataset.depth = String(depth);
  node.appendChild(this.options.renderRow(item, node, this));
  var toggle = this.toggleOf(node);
  if (toggle && !toggle.disabled) {
    if (!node.hasAttribute("aria-expanded")) node.setAttribute("aria-expanded", "false");
  } else {
    node.removeAttribute("aria-expanded"); // a leaf
  }
  return node;
};

// The button that opens and closes `node` (a row puts it where its columns want it). It is
// not a tab stop of its own: the keyboard works on the node (see onKey).
Tree.prototype.toggle = function (node) {
  var button = document.createElement("button");
  button.type = "button";
  button.tabIndex = -1;
  button.className = this.options.classes.toggle;
  button.textContent = "▸";
  button.setAttribute("aria-label", this.options.labels.expand);
  var self = this;
  button.addEventListener("click", function () { self.flip(node); });
  return button;
};

Tree.prototype.toggleOf = function (node) {
  var classes = this.options.classes;
  return node.querySelector(":scope > ." + classes.row + " ." + classes.toggle);
};

Tree.prototype.box = function (node) {
  return node.querySelector(":scope > ." + this.options.classes.group);
};

Tree.prototype.group = function (node) {
  var box = this.box(node);
  if (!box) {
    box = document.createElement(this.options.groupTag);
    box.className = this.options.classes.group;
    box.setAttribute("role", "group");
    node.appendChild(box);
  }
  return box;
};

// Append a page of children to `box`, with a "show more" control when some are left;
// `loaded` is how many children of `nodeId` are shown once these are.
Tree.prototype.append = function (box, nodeId, items, left, depth, loaded) {
  var self = this;
  var old = box.querySelector(":scope > .tree-more");
  if (old) old.remove();
  items.forEach(function (item) { box.appendChild(self.node(item, depth)); });
  this.keepTabStop();
  if (left <= 0) return;
  var more = this.options.renderMore(left, depth);
  more.element.classList.add("tree-more");
  var generation = this.generation;
  more.button.addEventListener("click", function () {
    more.button.disabled = true;
    self.options.fetchPage(nodeId, loaded).then(function (page) {
      if (!self.isCurrent(generation)) return;
      self.append(box, nodeId, page.items, page.left, depth, loaded + page.items.length);
    }).catch(function (error) { self.fail(error); });
  });
  box.appendChild(more.element);
};

Tree.prototype.setExpanded = function (node, expanded) {
  node.setAttribute("aria-expanded", expanded ? "true" : "false");
  var labels = this.options.labels;
  var toggle = this.toggleOf(node);
  if (toggle) {
    toggle.textContent = expanded ? "▾" : "▸";
    toggle.setAttribute("aria-label", expanded ? labels.collapse : labels.expand);
  }
  var box = this.box(node);
  if (box) box.hidden = !expanded;
  this.changed();
};

// Show a page of children that came with another answer (a path opened on load).
Tree.prototype.fill = function (node, items, left) {
  node.dataset.loaded = "1";
  var depth = Number(node.dataset.depth) + 1;
  var box = this.group(node);
  this.append(box, this.idOf(node), items, left, depth, items.length);
  this.setExpanded(node, true);
  return box;
};

// Open `node`, fetching its first page of children the first time; answers its child box
// (null when the answer came for an older set of options). One fetch at a time per node.
Tree.prototype.expand = function (node) {
  if (node.dataset.loaded) {
    this.setExpanded(node, true);
    return Promise.resolve(this.group(node));
  }
  if (node.treeLoading) return node.treeLoading;
  var self = this;
  var generation = this.generation;
  var loadingClass = this.options.loadingClass;
  if (loadingClass) node.classList.add(loadingClass);
  node.setAttribute("aria-busy", "true");
  node.treeLoading = this.options.fetchPage(this.idOf(node), 0)
    .then(function (page) {
      if (!self.isCurrent(generation)) return null;
      if (loadingClass) node.classList.remove(loadingClass);
      return self.fill(node, page.items, page.left);
    })
    .finally(function () {
      node.treeLoading = null;
      node.removeAttribute("aria-busy");
    });
  return node.treeLoading;
};

Tree.prototype.collapse = function (node) {
  var selected = this.selected;
  if (selected && selected !== node && node.contains(selected)) {
    this.select(node, document.activeElement === selected); // it would be hidden
  }
  this.setExpanded(node, false);
};

Tree.prototype.flip = function (node) {
  if (node.getAttribute("aria-expanded") === "true") {
    this.collapse(node);
    return;
  }
  var self = this;
  this.expand(node).catch(function (error) { self.fail(error); });
};

Tree.prototype.fail = function (error) {
  if (this.options.onError) this.options.onError(error);
};

Tree.prototype.changed = function () {
  if (this.options.onChange) this.options.onChange(this);
};

// --- selection and the keyboard -------------------------------------------------------------

Tree.prototype.attach = function (container) {
  var self = this;
  container.addEventListener("keydown", function (event) { self.onKey(event); });
  container.addEventListener("click", function (event) {
    if (event.target.closest(".tree-more")) return; // "show more" is not its parent's row
    var node = event.target.closest("[role=treeitem]");
    if (node && container.contains(node)) self.select(node, true);
  });
};

// One node is the tree's tab stop: the selected one, else the first.
Tree.prototype.keepTabStop = function () {
  if (!this.container) return;
  if (this.selected && this.container.contains(this.selected)) return;
  this.selected = null;
  var first = this.container.querySelector("[role=treeitem]");
  if (first && !this.container.querySelector("[role=treeitem][tabindex='0']")) first.tabIndex = 0;
};

Tree.prototype.select = function (node, focus) {
  var previous = this.selected;
  if (previous && previous !== node) {
    previous.setAttribute("aria-selected", "false");
    previous.tabIndex = -1;
  }
  if (this.container) {
    this.container.querySelectorAll("[role=treeitem][tabindex='0']").forEach(function (other) {
      if (other !== node) other.tabIndex = -1;
    });
  }
  this.selected = node;
  node.setAttribute("aria-selected", "true");
  node.tabIndex = 0;
  if (focus) node.focus();
  if (previous !== node) this.changed();
};

function shown(node) {
  var group = node.parentElement && node.parentElement.closest("[role=group][hidden]");
  return !group;
}

Tree.prototype.visibleNodes = function () {
  var nodes = this.container.querySelectorAll("[role=treeitem]");
  return Array.prototype.filter.call(nodes, shown);
};

Tree.prototype.parentNode = function (node) {
  var parent = node.parentElement && node.parentElement.closest("[role=treeitem]");
  return parent && this.container.contains(parent) ? parent : null;
};

Tree.prototype.onKey = function (event) {
  if (event.altKey || event.ctrlKey || event.metaKey) return;
  var node = event.target;
  if (!node.getAttribute || node.getAttribute("role") !== "treeitem") return; // a control's keys
  var self = this;
  var expanded = node.getAttribute("aria-expanded");
  var move = null;
  switch (event.key) {
    case "ArrowDown":
    case "ArrowUp": {
      var nodes = this.visibleNodes();
      var at = nodes.indexOf(node) + (event.key === "ArrowDown" ? 1 : -1);
      move = nodes[at] || null;
      break;
    }
    case "Home":
      move = this.visibleNodes()[0];
      break;
    case "End": {
      var all = this.visibleNodes();
      move = all[all.length - 1];
      break;
    }
    case "ArrowRight":
      if (expanded === "false") {
        this.expand(node).catch(function (error) { self.fail(error); });
      } else if (expanded === "true") {
        var box = this.box(node);
        move = box && box.querySelector(":scope > [role=treeitem]");
      }
      break;
    case "ArrowLeft":
      if (expanded === "true") this.collapse(node);
      else move = this.parentNode(node);
      break;
    case "Enter":
      if (this.options.onActivate) this.options.onActivate(node);
      else if (expanded !== null) this.flip(node);
      break;
    default:
      return;
  }
  event.preventDefault();
  if (move) {
    this.select(move, true);
    move.scrollIntoView({block: "nearest"});
  }
};

// --- opening a path: levels that came with an answer, or ids fetched one after another ------

Tree.prototype.find = function (id) {
  if (!this.container) return null;
  var attribute = "data-" + this.options.idKey.replace(/[A-Z]/g, function (c) { return "-" + c.toLowerCase(); });
  return this.container.querySelector("[" + attribute + '="' + CSS.escape(id) + '"]');
};

// [{node, children, more}] parents first: each node found is filled and opened.
Tree.prototype.openLevels = function (levels) {
  var self = this;
  (levels || []).forEach(function (level) {
    var node = self.find(level.node);
    if (!node) return;
    if (node.dataset.loaded) self.setExpanded(node, true);
    else self.fill(node, level.children, level.more);
  });
};

// Open these ids (parents first), fetching each node's children in turn; skips the ones that
// are not shown (another set of options, or beyond a page). Resolves when all are open.
Tree.prototype.openIds = function (ids) {
  var self = this;
  var generation = this.generation;
  return ids.reduce(function (done, id) {
    return done.then(function () {
      if (!self.isCurrent(generation)) return null;
      var node = self.find(id);
      return node && node.hasAttribute("aria-expanded") ? self.expand(node) : null;
    });
  }, Promise.resolve(null));
};

// The nodes open on screen (parents first) and the selected one: what a permalink keeps.
Tree.prototype.state = function () {
  var self = this;
  var open = [];
  if (this.container) {
    this.container.querySelectorAll("[role=treeitem][aria-expanded=true]").forEach(function (node) {
      if (shown(node)) open.push(self.idOf(node));
    });
  }
  return {open: open, sel: this.selected ? this.idOf(this.selected) : ""};
};

// Select the node of this id if it is shown (a permalink's selection), scrolled into view.
Tree.prototype.selectId = function (id, focus) {
  var node = id ? this.find(id) : null;
  if (!node || !shown(node)) return null;
  this.select(node, focus);
  node.scrollIntoView({block: "nearest"});
  return node;
};

// The state kept in the address (tree_state.js): {open, sel, view}.
export function readHash() {
  return parseHash(window.location.hash);
}

export function writeHash(state) {
  const hash = formatHash(state);
  if (hash === window.location.hash) return;
  window.history.replaceState(null, "", window.location.pathname + window.location.search + hash);
}

// What a frame's row shows after its name, in every tree (call tree, diff tree): an "inlined"
// mark for a call inlined into its parent, and `file:line` where a debug file or the upload
// gave them (`line` is null where a function's call sites disagree). `classes` names the
// spans' classes: {inlined, file}. Answers the spans and the words for the row's tooltip.
export function frameNotes(item, classes) {
  var where = item.file ? item.file + (item.line ? ":" + item.line : "") : "";
  var spans = [];
  function span(text, className) {
    var element = document.createElement("span");
    element.className = className;
    element.textContent = text;
    spans.push(element);
  }
  if (item.inlined) span("inlined", classes.inlined);
  if (where) span(where, classes.file);
  return {spans: spans, title: (item.inlined ? " [inlined]" : "") + (where ? " " + where : "")};
}
