// Snapshot pickers: a text box above each <select data-picker> keeps only the snapshots whose
// line or build matches what is typed (the build is the <optgroup> label). Without JavaScript
// the select, grouped by build, works as it is.

function setUp(select) {
  // what the select holds, kept to rebuild it: [{label, options: [{node, text}]}]
  var groups = Array.prototype.map.call(select.querySelectorAll("optgroup"), function (group) {
    return {
      label: group.label,
      options: Array.prototype.map.call(group.querySelectorAll("option"), function (option) {
        return {node: option, text: (group.label + " " + option.textContent).toLowerCase()};
      })
    };
  });
  var box = document.createElement("input");
  box.type = "search";
  box.className = "picker-filter";
  box.placeholder = "filter: build, device, trigger, #id";
  box.setAttribute("aria-label", "Filter the snapshots of " + (select.name || "this picker"));
  select.parentNode.insertBefore(box, select);

  box.addEventListener("input", function () {
    var words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    var chosen = select.value;
    select.textContent = "";
    groups.forEach(function (group) {
      var kept = group.options.filter(function (option) {
        // the chosen snapshot stays, so the form never sends another one unasked
        return option.node.value === chosen || words.every(function (w) { return option.text.indexOf(w) >= 0; });
      });
      if (!kept.length) return;
      var element = document.createElement("optgroup");
      element.label = group.label;
      kept.forEach(function (option) { element.appendChild(option.node); });
      select.appendChild(element);
    });
    select.value = chosen;
  });
}

// a module script runs once the page is parsed
document.querySelectorAll("select[data-picker]").forEach(setUp);
