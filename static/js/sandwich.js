// The sandwich of one function (Pyroscope's): its callers above (the function on the bottom row,
// who calls it above it), its totals, its callees below (the function on top), both drawn by
// flame/flame.js from /calltree/sandwich under the tree's options. Clicking a node of either
// shows that function's sandwich. The function is in the permalink (?sandwich=, calltree.js); its
// callers and callees as a table in the CSV link beside its totals (/calltree/sandwich.csv).
import {Flame} from "./flame/flame.js";
import {getJSON} from "./pending.js";
import {formatBytes, formatCount} from "./units.js";

// Start the sandwich view of the call tree `ct` (startCallTree's answer) in `view`.
export function startSandwich(ct, view) {
  var note = view.querySelector(".ct-sandwich-note");
  var line = view.querySelector(".ct-sandwich-function");
  var csvLink = view.querySelector(".ct-sandwich-csv");
  var asked = 0;

  function clicked(flame) {
    return function (id) {
      var i = flame.data ? flame.data.ids.indexOf(id) : -1;
      if (i >= 0 && flame.data.kinds[i] === "frame") ct.setSandwich(flame.data.labels[i]);
    };
  }
  var callers = new Flame(view.querySelector(".ct-sandwich-callers"), {flip: true});
  callers.options.onFocus = clicked(callers);
  var callees = new Flame(view.querySelector(".ct-sandwich-callees"), {});
  callees.options.onFocus = clicked(callees);

  function load() {
    var name = ct.sandwich();
    var mine = ++asked;
    view.dataset.ready = "";
    line.textContent = "";
    csvLink.hidden = true;
    note.classList.remove("error");
    if (!name) {
      note.textContent = "Select a function in the tree and choose “Sandwich of …” in its data " +
        "mining, or click a node here.";
      return;
    }
    note.textContent = "Loading the callers and callees of " + name + "…";
    var params = ct.options();
    params.delete("focus");
    params.set("function", name);
    csvLink.href = view.dataset.csv + "?" + params.toString();
    getJSON(view.dataset.api + "?" + params.toString(), {
      isCurrent: function () { return mine === asked; },
      onProgress: function () { note.textContent = "Building the call tree…"; },
    }).then(function (data) {
      if (mine !== asked || !data) return null;
      var f = data.function;
      note.textContent = "Click a node to see its own sandwich.";
      var name = document.createElement("strong");
      name.className = "ct-sandwich-name";
      name.textContent = f.symbol;
      line.appendChild(name);
      line.appendChild(document.createTextNode(
        (f.image ? " (" + f.image + ")" : "") + " — total " + formatBytes(f.bytes) + " in " +
        formatCount(f.count) + " allocations (" +
        (data.total_bytes ? (100 * f.bytes / data.total_bytes).toFixed(2) : "0.00") +
        " % of the tree), self " + formatBytes(f.self_bytes) + " in " +
        formatCount(f.self_count) + " allocations"));
      csvLink.hidden = false;
      return Promise.all([callers.draw(data.callers), callees.draw(data.callees)]).then(function () {
        view.dataset.ready = "1";
      });
    }).catch(function (error) {
      if (mine !== asked) return;
      note.classList.add("error");
      note.textContent = "No sandwich of " + name + ": " + error.message;
    });
  }
  return {load: load};
}
