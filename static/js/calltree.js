// The call tree of a snapshot or a build: each node's children are fetched from the API when it
// is opened (never the whole tree), "show more" pages through nodes with many children, and the
// heaviest path is opened on load. Text is always set with textContent (symbols are user data).
(function () {
  "use strict";
  var widget = document.getElementById("calltree");
  if (!widget) return;
  var api = widget.dataset.api;
  var form = document.getElementById("calltree-options");
  var roots = widget.querySelector(".ct-roots");
  var statusLine = widget.querySelector(".ct-status");
  var LIMIT = 100;
  var loadToken = 0; // answers to an older set of options are dropped

  var KIB = 1024, MIB = KIB * 1024, GIB = MIB * 1024;
  function formatBytes(n) {
    var sign = n < 0 ? "-" : "";
    n = Math.abs(n);
    if (n < KIB) return sign + n + " Bytes";
    if (n < MIB) return sign + (n / KIB).toFixed(2) + " KiB";
    if (n < GIB) return sign + (n / MIB).toFixed(2) + " MiB";
    return sign + (n / GIB).toFixed(2) + " GiB";
  }
  function formatCount(n) { return Number(n).toLocaleString("en-US"); }

  function options() {
    var params = new URLSearchParams();
    if (widget.dataset.category) params.set("category", widget.dataset.category);
    if (widget.dataset.generation) params.set("generation", widget.dataset.generation);
    var lifespan = form.querySelector("input[name=lifespan]:checked");
    if (lifespan && lifespan.value !== "all") params.set("lifespan", lifespan.value);
    ["inverted", "hide_system", "thread"].forEach(function (name) {
      if (form.elements[name].checked) params.set(name, "1");
    });
    return params;
  }

  function fetchChildren(nodeId, offset, extra) {
    var params = options();
    if (nodeId !== null) params.set("node", nodeId);
    if (offset) params.set("offset", String(offset));
    params.set("limit", String(LIMIT));
    if (extra) Object.keys(extra).forEach(function (k) { params.set(k, extra[k]); });
    return fetch(api + "?" + params.toString(), {
      credentials: "same-origin",
      headers: {"Accept": "application/json"},
    }).then(function (response) {
      return response.json().then(function (data) {
        if (!response.ok) throw new Error(data.error || ("HTTP " + response.status));
        return data;
      });
    });
  }

  function cell(text, className) {
    var span = document.createElement("span");
    span.className = className || "num";
    span.textContent = text;
    return span;
  }

  function renderNode(view, depth) {
    var node = document.createElement("div");
    node.className = "ct-node ct-" + view.kind + (view.system ? " ct-system" : "");
    node.setAttribute("role", "treeitem");
    node.dataset.id = view.id;
    node.dataset.depth = String(depth);
    var row = document.createElement("div");
    row.className = "ct-row";
    row.style.setProperty("--depth", String(depth));
    var name = document.createElement("span");
    name.className = "ct-name";
    if (view.has_children) {
      var toggle = document.createElement("button");
      toggle.type = "button";
      toggle.className = "ct-toggle";
      toggle.textContent = "▸";
      toggle.setAttribute("aria-label", "Expand");
      toggle.addEventListener("click", function () { toggleNode(node); });
      name.appendChild(toggle);
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
    if (view.image) {
      var image = document.createElement("span");
      image.className = "ct-image";
      image.textContent = view.image;
      name.appendChild(image);
    }
    name.title = view.symbol + (view.image ? " (" + view.image + ")" : "");
    row.appendChild(name);
    row.appendChild(cell(formatBytes(view.bytes), "num ct-bytes"));
    row.appendChild(cell(view.percent.toFixed(2) + " %", "num ct-percent"));
    row.appendChild(cell(formatCount(view.count), "num ct-count"));
    row.appendChild(cell(formatBytes(view.self_bytes), "num ct-self-bytes"));
    row.appendChild(cell(formatCount(view.self_count), "num ct-self-count"));
    row.addEventListener("dblclick", function () { if (view.has_children) toggleNode(node); });
    node.appendChild(row);
    return node;
  }

  function childContainer(node) {
    var box = node.querySelector(":scope > .ct-children");
    if (!box) {
      box = document.createElement("div");
      box.className = "ct-children";
      box.setAttribute("role", "group");
      node.appendChild(box);
    }
    return box;
  }

  // Append a page of children to `box`, with a "show more" button when some are left.
  function appendChildren(box, nodeId, views, more, depth, loaded) {
    var old = box.querySelector(":scope > .ct-more");
    if (old) old.remove();
    views.forEach(function (view) { box.appendChild(renderNode(view, depth)); });
    if (more > 0) {
      var line = document.createElement("div");
      line.className = "ct-more";
      line.style.paddingLeft = "calc(.6rem + " + (depth * 1.1 + 1.45) + "rem)";
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = "Show " + Math.min(more, LIMIT) + " more (" + more + " not shown)";
      var token = loadToken;
      button.addEventListener("click", function () {
        button.disabled = true;
        fetchChildren(nodeId, loaded).then(function (data) {
          if (token !== loadToken) return;
          appendChildren(box, nodeId, data.children, data.more, depth, loaded + data.children.length);
        }).catch(showError);
      });
      line.appendChild(button);
      box.appendChild(line);
    }
  }

  function setExpanded(node, expanded) {
    node.setAttribute("aria-expanded", expanded ? "true" : "false");
    var toggle = node.querySelector(":scope > .ct-row .ct-toggle");
    if (toggle) {
      toggle.textContent = expanded ? "▾" : "▸";
      toggle.setAttribute("aria-label", expanded ? "Collapse" : "Expand");
    }
    var box = node.querySelector(":scope > .ct-children");
    if (box) box.hidden = !expanded;
  }

  function toggleNode(node) {
    if (node.getAttribute("aria-expanded") === "true") { setExpanded(node, false); return; }
    if (node.dataset.loaded) { setExpanded(node, true); return; }
    var token = loadToken;
    node.classList.add("ct-loading");
    fetchChildren(node.dataset.id, 0).then(function (data) {
      if (token !== loadToken) return;
      node.classList.remove("ct-loading");
      node.dataset.loaded = "1";
      var depth = Number(node.dataset.depth) + 1;
      appendChildren(childContainer(node), node.dataset.id, data.children, data.more, depth,
                     data.children.length);
      setExpanded(node, true);
    }).catch(showError);
  }

  function findChild(box, id) {
    for (var i = 0; i < box.children.length; i++) {
      if (box.children[i].dataset && box.children[i].dataset.id === id) return box.children[i];
    }
    return null;
  }

  function showError(error) {
    statusLine.classList.add("error");
    statusLine.textContent = "Could not load the call tree: " + error.message;
  }

  function load() {
    loadToken += 1;
    var token = loadToken;
    roots.textContent = "";
    statusLine.classList.remove("error");
    statusLine.textContent = "Loading…";
    widget.setAttribute("aria-busy", "true");
    fetchChildren(null, 0, {expand: "heaviest"}).then(function (data) {
      if (token !== loadToken) return;
      widget.removeAttribute("aria-busy");
      statusLine.textContent = formatBytes(data.total_bytes) + " in " +
        formatCount(data.total_count) + " allocations";
      if (!data.children.length) {
        var empty = document.createElement("div");
        empty.className = "ct-empty";
        empty.textContent = "No allocations under these filters.";
        roots.appendChild(empty);
        return;
      }
      appendChildren(roots, null, data.children, data.more, 0, data.children.length);
      // Open the heaviest path: each level's node is the first child of the level above.
      var box = roots;
      (data.heaviest || []).forEach(function (level) {
        var node = box && findChild(box, level.node);
        if (!node) { box = null; return; }
        node.classList.add("ct-heavy");
        node.dataset.loaded = "1";
        var depth = Number(node.dataset.depth) + 1;
        box = childContainer(node);
        appendChildren(box, level.node, level.children, level.more, depth, level.children.length);
        setExpanded(node, true);
      });
      if (box && box.firstChild && box.firstChild.classList) box.firstChild.classList.add("ct-heavy");
      widget.dataset.ready = "1";
    }).catch(showError);
  }

  // Keep the options in the address (reload and share keep them) and in the page's links.
  function syncLocation() {
    var params = new URLSearchParams(window.location.search);
    ["inverted", "hide_system", "thread", "lifespan"].forEach(function (k) { params.delete(k); });
    var current = options();
    ["inverted", "hide_system", "thread", "lifespan"].forEach(function (k) {
      if (current.has(k)) params.set(k, current.get(k));
    });
    var query = params.toString();
    window.history.replaceState(null, "", window.location.pathname + (query ? "?" + query : ""));
    document.querySelectorAll("a.ct-keep").forEach(function (link) {
      var url = new URL(link.href, window.location.href);
      ["inverted", "hide_system", "thread", "lifespan"].forEach(function (k) {
        if (current.has(k)) url.searchParams.set(k, current.get(k));
        else url.searchParams.delete(k);
      });
      link.href = url.pathname + url.search;
    });
  }

  form.addEventListener("change", function () {
    widget.dataset.ready = "";
    syncLocation();
    load();
  });
  load();
})();
