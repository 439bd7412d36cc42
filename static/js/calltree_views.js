// The call tree's other views (on what calltree.js's startCallTree answers): the same tree under
// the same options as a flame graph (flame/flame.js: click a node to focus on it, click the
// focused node to go back to the whole tree) or as Top Functions (by self or total bytes; a function's name
// searches the tree for it). The view goes in the hash with the tree's path (#view=flame). While
// a task builds the tree, each says how far it is (pending.js).
import {Flame} from "./flame/flame.js";
import {getJSON as getPending, percent} from "./pending.js";
import {startSandwich} from "./sandwich.js";
import {readHash} from "./tree.js";
import {formatBytes, formatCount} from "./units.js";

const FUNCTIONS_SHOWN = 200;

// Start the flame graph and Top Functions views of the call tree `ct` (startCallTree's answer).
export function startViews(ct) {
  var widget = ct.widget;
  var treeBox = widget.querySelector(".ct-tree");
  var flameView = widget.querySelector(".ct-flame-view");
  var flameBox = widget.querySelector(".ct-flame");
  var flameNote = widget.querySelector(".ct-flame-note");
  var functionsView = widget.querySelector(".ct-functions-view");
  var sandwichView = widget.querySelector(".ct-sandwich-view");
  var sandwich = startSandwich(ct, sandwichView);
  var functionsBody = functionsView.querySelector("tbody");
  var functionsStatus = functionsView.querySelector(".ct-functions-status");
  var csvLink = functionsView.querySelector(".ct-functions-csv");
  var buttons = widget.querySelectorAll(".ct-views button");
  var order = "self";
  var asked = 0; // answers to an older request are dropped

  // The answer to request number `mine`, asked again while a task makes `what` (the flame
  // graph, Top Functions: it builds the tree first if need be; its progress in `line`); null
  // once another request was made.
  function getJSON(url, params, mine, line, what) {
    return getPending(url + "?" + params.toString(), {
      isCurrent: function () { return mine === asked; },
      onProgress: function (state) {
        line.textContent = (state.state === "queued" ? "Waiting for a worker to make " + what
          : "Making " + what + "… " + percent(state) + " %");
      },
    });
  }

  var flame = new Flame(flameBox, {
    // the path from the root stays above a focused node: its top ("All allocations") goes
    // back to the whole tree, a caller on the path focuses on it
    onFocus: function (id, kind) {
      if (kind === "all") {
        if (ct.options().get("focus")) ct.setFocus("");
        return;
      }
      if (id !== ct.options().get("focus")) ct.setFocus(id);
    },
  });

  function loadFlame() {
    var mine = ++asked;
    flameBox.dataset.ready = "";
    flameNote.classList.remove("error");
    flameNote.textContent = "Loading the flame graph…";
    getJSON(widget.dataset.flame, ct.options(), mine, flameNote, "the flame graph").then(function (data) {
      if (mine !== asked || !data) return null;
      flameNote.textContent = data.ids.length <= 1 ? "No allocations under these filters." :
        "Each node as wide as its " + (data.unit === "count" ? "allocations" : "bytes") +
        "; click one to focus on it" + (ct.options().get("focus") ? " (its callers stay above it), the top one to see the whole tree" : "") +
        ". " + formatCount(data.nodes) + " nodes drawn (the lightest merged as “other”).";
      return flame.draw(data);
    }).catch(function (error) {
      flameNote.classList.add("error");
      flameNote.textContent = "Could not draw the flame graph: " + error.message;
    });
  }

  function cell(row, text, className) {
    var td = document.createElement("td");
    if (className) td.className = className;
    td.textContent = text;
    row.appendChild(td);
    return td;
  }

  function loadFunctions() {
    var mine = ++asked;
    var params = ct.options();
    params.set("order", order);
    csvLink.href = widget.dataset.functionsCsv + "?" + params.toString();
    params.set("limit", String(FUNCTIONS_SHOWN));
    functionsView.dataset.ready = "";
    functionsStatus.textContent = "Loading…";
    getJSON(widget.dataset.functions, params, mine, functionsStatus, "Top Functions").then(function (data) {
      if (mine !== asked || !data) return;
      functionsBody.textContent = "";
      data.functions.forEach(function (f) {
        var row = document.createElement("tr");
        if (f.system) row.className = "ct-system";
        var name = cell(row, "", "ct-symbol");
        var search = document.createElement("button");
        search.type = "button";
        search.className = "link";
        search.textContent = f.symbol;
        search.title = "Show the paths through " + f.symbol + " in the tree";
        if (f.kind === "frame") {
          search.addEventListener("click", function () { show(""); ct.setSearch(f.symbol); });
          name.appendChild(search);
        } else {
          name.textContent = f.symbol;
        }
        cell(row, f.image, "muted");
        cell(row, formatBytes(f.self_bytes), "num");
        cell(row, formatCount(f.self_count), "num");
        cell(row, formatBytes(f.bytes), "num");
        cell(row, formatCount(f.count), "num");
        functionsBody.appendChild(row);
      });
      functionsStatus.textContent = data.total > data.functions.length
        ? "The first " + data.functions.length + " of " + formatCount(data.total) + " functions."
        : formatCount(data.total) + " functions.";
      functionsView.dataset.ready = "1";
    }).catch(function (error) {
      functionsStatus.textContent = "Could not list the functions: " + error.message;
    });
  }

  functionsView.querySelectorAll("button[data-order]").forEach(function (button) {
    button.addEventListener("click", function () {
      order = button.dataset.order;
      functionsView.querySelectorAll("button[data-order]").forEach(function (other) {
        other.setAttribute("aria-pressed", other === button ? "true" : "false");
      });
      loadFunctions();
    });
  });

  function show(view) {
    widget.dataset.view = view;
    buttons.forEach(function (button) {
      button.setAttribute("aria-pressed", button.dataset.view === view ? "true" : "false");
    });
    treeBox.hidden = view !== "";
    flameView.hidden = view !== "flame";
    functionsView.hidden = view !== "functions";
    sandwichView.hidden = view !== "sandwich";
    if (view === "flame") loadFlame();
    else if (view === "functions") loadFunctions();
    else if (view === "sandwich") sandwich.load();
    ct.hashChanged();
  }

  buttons.forEach(function (button) {
    button.addEventListener("click", function () { show(button.dataset.view); });
  });
  ct.onChange(function (what) {
    if (what !== "options") return;
    if (widget.dataset.view === "flame") loadFlame();
    else if (widget.dataset.view === "functions") loadFunctions();
    else if (widget.dataset.view === "sandwich") sandwich.load();
  });
  ct.onSandwich(function () { show("sandwich"); });
  var first = readHash().view;
  if (first === "flame" || first === "functions" || first === "sandwich") show(first);
  else if (ct.sandwich()) show("sandwich");
}
