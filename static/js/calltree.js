// The call tree of a snapshot or a build, on the shared lazy tree (tree.js): its columns, its options form, and the heaviest path, which the API sends with
// the roots so it opens on load. Text is always set with textContent (symbols are user data).
// Options that change the tree (search, flatten, focus, the data-mining rules and minimums of
// mining.js, the sandwich's function) live in the query string with the others; the opened path and the selection in the hash (tree.js), so a reload
// opens the same nodes. calltree_views.js adds the flame graph and Top Functions through what
// startCallTree answers (calltree_page.js starts both). A tree too large to build in a request is built by a task: the API
// answers 202 until it is there, and a progress bar shows how far it is (pending.js).
import {getJSON, Progress} from "./pending.js";
import {actions, chips, minimum, PARAMS as MINING, readRules, withoutRule, withRule, writeRules} from "./mining.js";
import {frameNotes, readHash, Tree, writeHash} from "./tree.js";
import {formatBytes, formatCount} from "./units.js";

const LIMIT = 100;
const KEPT = ["inverted", "hide_system", "thread", "lifespan", "flatten", "search", "focus"].concat(MINING);

// Start the call tree of `widget` (#calltree); answers what the other views need of it.
export function startCallTree(widget) {
  var api = widget.dataset.api;
  var form = document.getElementById("calltree-options");
  // the options apply as they change; Enter in a field must not send the form
  form.addEventListener("submit", function (event) { event.preventDefault(); });
  var roots = widget.querySelector(".ct-roots");
  var statusLine = widget.querySelector(".ct-status");
  var progress = new Progress(widget, widget.querySelector(".ct-tree"));
  var start = new URLSearchParams(window.location.search);
  var state = {rules: readRules(start), focus: start.get("focus") || "",
    sandwich: start.get("sandwich") || ""};
  var initial = readHash(); // a permalink's open nodes and selection
  var listeners = [];

  function options() {
    // a build's snapshot filters (trigger, model, os), fixed by the page like the category
    var params = new URLSearchParams(widget.dataset.fixed || "");
    if (widget.dataset.categoryHash) params.set("category_hash", widget.dataset.categoryHash);
    if (widget.dataset.generation) params.set("generation", widget.dataset.generation);
    var lifespan = form.querySelector("input[name=lifespan]:checked");
    if (lifespan && lifespan.value !== "all") params.set("lifespan", lifespan.value);
    ["inverted", "hide_system", "thread"].forEach(function (name) {
      if (form.elements[name].checked) params.set(name, "1");
    });
    if (form.elements.flatten.checked) params.set("flatten", "1");
    var search = form.elements.search.value.trim();
    if (search) params.set("search", search);
    writeRules(state.rules, params);
    ["min_bytes", "min_count"].forEach(function (name) {
      var value = minimum(form.elements[name].value);
      if (value) params.set(name, value);
    });
    if (state.focus) params.set("focus", state.focus);
    return params;
  }

  // `waiting`: pending.js's options while a task builds the tree (its progress, and whether
  // the answer is still wanted)
  function fetchChildren(nodeId, offset, extra, waiting) {
    var params = options();
    if (nodeId !== null) params.set("node", nodeId);
    if (offset) params.set("offset", String(offset));
    params.set("limit", String(LIMIT));
    if (extra) Object.keys(extra).forEach(function (k) { params.set(k, extra[k]); });
    return getJSON(api + "?" + params.toString(), waiting);
  }

  function cell(text, className) {
    var span = document.createElement("span");
    span.className = className || "num";
    span.textContent = text;
    return span;
  }

  function renderRow(view, node, tree) {
    node.className = "ct-node ct-" + view.kind + (view.system ? " ct-system" : "") +
      (view.match ? " ct-match" : "");
    node.ctView = view;
    var row = document.createElement("div");
    row.className = "ct-row";
    row.style.setProperty("--depth", node.dataset.depth);
    var name = document.createElement("span");
    name.className = "ct-name";
    if (view.has_children) {
      name.appendChild(tree.toggle(node));
      node.setAttribute("aria-expanded", "false");
    } else {
      var leaf = document.createElement("span");
      leaf.className = "ct-leaf";
      name.appendChild(leaf);
    }
    var symbol = document.createElement("span");
    symbol.className = "ct-symbol";
    symbol.textContent = view.symbol;
    name.appendChild(symbol);
    // From a debug file: the source location and inlined calls (their own rows, marked).
    var notes = frameNotes(view, {inlined: "ct-image ct-inlined", file: "ct-image ct-file"});
    notes.spans.forEach(function (span) { name.appendChild(span); });
    if (view.image) {
      var image = document.createElement("span");
      image.className = "ct-image";
      image.textContent = view.image;
      name.appendChild(image);
    }
    name.title = view.symbol + notes.title + (view.image ? " (" + view.image + ")" : "");
    row.appendChild(name);
    row.appendChild(cell(formatBytes(view.bytes), "num ct-bytes"));
    row.appendChild(cell(view.percent.toFixed(2) + " %", "num ct-percent"));
    row.appendChild(cell(formatCount(view.count), "num ct-count"));
    row.appendChild(cell(formatBytes(view.self_bytes), "num ct-self-bytes"));
    row.appendChild(cell(formatCount(view.self_count), "num ct-self-count"));
    row.addEventListener("dblclick", function () { if (view.has_children) tree.flip(node); });
    return row;
  }

  function renderMore(left, depth) {
    var line = document.createElement("div");
    line.className = "ct-more";
    line.style.paddingLeft = "calc(.6rem + " + (depth * 1.1 + 1.45) + "rem)";
    var button = document.createElement("button");
    button.type = "button";
    button.textContent = "Show " + Math.min(left, LIMIT) + " more (" + left + " not shown)";
    line.appendChild(button);
    return {element: line, button: button};
  }

  function showError(error) {
    progress.hide();
    statusLine.classList.add("error");
    statusLine.textContent = "Could not load the call tree: " + error.message;
  }

  var tree = new Tree({
    container: widget.querySelector(".ct-tree"),
    onChange: function () { changed(); },
    nodeTag: "div",
    groupTag: "div",
    classes: {row: "ct-row", group: "ct-children", toggle: "ct-toggle"},
    idKey: "id",
    labels: {expand: "Expand", collapse: "Collapse"},
    loadingClass: "ct-loading",
    fetchPage: function (nodeId, offset) {
      return fetchChildren(nodeId, offset).then(function (data) {
        return {items: data.children, left: data.more};
      });
    },
    renderRow: renderRow,
    renderMore: renderMore,
    onError: showError,
  });

  function findChild(box, id) {
    for (var i = 0; i < box.children.length; i++) {
      if (box.children[i].dataset && box.children[i].dataset.id === id) return box.children[i];
    }
    return null;
  }

  // The view and the tree's opened nodes and selection go in the hash (a permalink).
  function changed() {
    if (restoring) return;
    var now = tree.state();
    writeHash({view: widget.dataset.view || "", open: now.open, sel: now.sel});
    listeners.forEach(function (listener) { listener(); });
  }

  var restoring = false;

  // What opens with the roots: the permalink's nodes (first load only), the paths to the
  // search's matches, or the heaviest path.
  function expansion(search, restore) {
    if (restore && restore.open.length) return {open: restore.open.join(",")};
    return search ? {expand: "matches"} : {expand: "heaviest"};
  }

  function openHeaviest(data) {
    // Each level's node is the first child of the level above.
    var box = roots;
    (data.heaviest || []).forEach(function (level) {
      var node = box && findChild(box, level.node);
      if (!node) { box = null; return; }
      node.classList.add("ct-heavy");
      box = tree.fill(node, level.children, level.more);
    });
    if (box && box.firstChild && box.firstChild.classList) box.firstChild.classList.add("ct-heavy");
  }

  function load() {
    tree.reset();
    var generation = tree.generation;
    roots.textContent = "";
    statusLine.classList.remove("error");
    statusLine.textContent = "Loading…";
    progress.hide();
    widget.setAttribute("aria-busy", "true");
    var search = options().get("search") || "";
    var restore = initial;
    initial = null;
    fetchChildren(null, 0, expansion(search, restore), {
      isCurrent: function () { return tree.isCurrent(generation); },
      onProgress: function (state) {
        statusLine.textContent = "";
        progress.show(state, "Building the call tree");
      },
    }).then(function (data) {
      if (!tree.isCurrent(generation) || !data) return;
      progress.hide();
      widget.removeAttribute("aria-busy");
      statusLine.textContent = formatBytes(data.total_bytes) + " in " +
        formatCount(data.total_count) + " allocations" +
        (search ? " through “" + search + "”" : "");
      focusLine(data);
      if (!data.children.length) {
        var empty = document.createElement("div");
        empty.className = "ct-empty";
        empty.textContent = "No allocations under these filters.";
        roots.appendChild(empty);
        return;
      }
      restoring = true;
      tree.append(roots, null, data.children, data.more, 0, data.children.length);
      if (data.heaviest) openHeaviest(data);
      tree.openLevels(data.opened);
      restoring = false;
      var selected = restore && restore.open.length ? tree.selectId(restore.sel, false) : null;
      if (!selected && data.matches && data.matches.length) tree.selectId(data.matches[0], false);
      changed();
      widget.dataset.ready = "1";
    }).catch(function (error) { restoring = false; showError(error); });
  }

  // Focus (a node's subtree as the tree) and the data-mining rules, shown above the tree as
  // chips that take them back; the selected node can be focused on, or mined (mining.js).
  var focusBar = widget.querySelector(".ct-focus");
  var focusButton = widget.querySelector(".ct-do-focus");
  var mineMenu = widget.querySelector(".ct-mine");

  function chip(text, label, onClick) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "ct-chip";
    button.textContent = text + " ×";
    button.setAttribute("aria-label", label);
    button.addEventListener("click", onClick);
    return button;
  }

  function focusLine(data) {
    focusBar.textContent = "";
    if (state.focus && data.children.length) {
      var root = data.children[0];
      var label = document.createElement("span");
      label.textContent = "Focused on ";
      focusBar.appendChild(label);
      focusBar.appendChild(chip(root.symbol, "Show the whole tree", function () { setFocus(""); }));
    }
    chips(state.rules).forEach(function (rule) {
      focusBar.appendChild(chip(rule.text, rule.label, function () {
        state.rules = withoutRule(state.rules, rule.param, rule.name);
        state.focus = ""; // the mined tree names its nodes by path: a focus is not found again
        reload();
      }));
    });
    focusBar.hidden = !focusBar.firstChild;
  }

  function selectedView() {
    return tree.selected && tree.selected.ctView ? tree.selected.ctView : null;
  }

  function updateActions() {
    var view = selectedView();
    var frame = view && view.kind === "frame";
    focusButton.disabled = !view || view.id === state.focus || view.kind === "other";
    mineMenu.textContent = "";
    var prompt = document.createElement("option");
    prompt.value = "";
    prompt.textContent = frame ? "Data mining…" : "Data mining (select a function)";
    mineMenu.appendChild(prompt);
    actions(view).forEach(function (action, i) {
      var option = document.createElement("option");
      option.value = String(i);
      option.textContent = action.text;
      mineMenu.appendChild(option);
    });
    mineMenu.disabled = !frame;
  }
  listeners.push(updateActions);

  function setFocus(id) {
    state.focus = id;
    reload();
  }

  focusButton.addEventListener("click", function () {
    var view = selectedView();
    if (view) setFocus(view.id);
  });
  mineMenu.addEventListener("change", function () {
    var action = actions(selectedView())[Number(mineMenu.value)];
    mineMenu.value = "";
    if (!action) return;
    if (action.param === "sandwich") { setSandwich(action.name); return; }
    state.rules = withRule(state.rules, action.param, action.name);
    // node ids change when the tree is mined: a focus would not be found again
    state.focus = "";
    reload();
  });

  // The sandwich's function (calltree_views.js shows it): in the permalink, not a tree option.
  var sandwichListeners = [];
  function setSandwich(name) {
    state.sandwich = name;
    syncLocation();
    sandwichListeners.forEach(function (listener) { listener(name); });
  }

  // Keep the options in the address (reload and share keep them) and in the page's links.
  function keep(params, current) {
    KEPT.forEach(function (k) { params.delete(k); });
    KEPT.forEach(function (k) {
      current.getAll(k).forEach(function (value) { params.append(k, value); });
    });
  }

  function syncLocation() {
    var params = new URLSearchParams(window.location.search);
    var current = options();
    if (state.sandwich) current.set("sandwich", state.sandwich);
    keep(params, current);
    var query = params.toString();
    window.history.replaceState(null, "", window.location.pathname + (query ? "?" + query : "") +
      window.location.hash);
    document.querySelectorAll("a.ct-keep").forEach(function (link) {
      var url = new URL(link.href, window.location.href);
      keep(url.searchParams, current);
      url.searchParams.delete("focus"); // another generation or category: another tree
      url.searchParams.delete("sandwich");
      link.href = url.pathname + url.search;
    });
  }

  function reload() {
    widget.dataset.ready = "";
    syncLocation();
    load();
    listeners.forEach(function (listener) { listener("options"); });
  }

  form.addEventListener("change", function (event) {
    if (event.target.name === "search") return; // typed: see below
    // these name the nodes differently: a focused node would not be found again
    if (["inverted", "thread", "hide_system", "flatten"].indexOf(event.target.name) >= 0) {
      state.focus = "";
    }
    reload();
  });
  var typing = null;
  form.elements.search.addEventListener("input", function () {
    clearTimeout(typing);
    typing = setTimeout(reload, 350);
  });
  form.elements.search.addEventListener("keydown", function (event) {
    if (event.key !== "Enter") return;
    event.preventDefault();
    clearTimeout(typing);
    reload();
  });

  const ct = {
    widget: widget,
    tree: tree,
    options: options,
    setFocus: setFocus,
    sandwich: function () { return state.sandwich; },
    setSandwich: setSandwich,
    onSandwich: function (listener) { sandwichListeners.push(listener); },
    setSearch: function (text) {
      form.elements.search.value = text;
      reload();
    },
    onChange: function (listener) { listeners.push(listener); },
    hashChanged: changed,
  };
  load();
  updateActions();
  return ct;
}
