// Call-tree data mining in the query string (a permalink), apart from the widget: the rules
// (charge, prune, remove a symbol or a library; each a repeated parameter, one name a value),
// the chips that show them, and the actions a selected node offers. Pure:
// tests/js/mining.test.mjs. The server applies them (allocations/logic/calltree/mining.py).

// Each kind of rule: its parameter, what it does to what, and its chip's words. `charge` is
// the library charged on the stacks (calltree/transform.py), the same as a charged symbol's.
export const RULES = [
  {param: "charge_symbol", target: "symbol", verb: "Charge", chip: "Charged to callers"},
  {param: "charge", target: "library", verb: "Charge", chip: "Charged to callers"},
  {param: "prune_symbol", target: "symbol", verb: "Prune", chip: "Pruned"},
  {param: "prune_library", target: "library", verb: "Prune", chip: "Pruned"},
  {param: "remove_symbol", target: "symbol", verb: "Remove", chip: "Removed"},
  {param: "remove_library", target: "library", verb: "Remove", chip: "Removed"},
];
// What a tree's permalink keeps of the data mining besides the rules.
export const MINIMUMS = ["min_bytes", "min_count"];
export const PARAMS = RULES.map((r) => r.param).concat(MINIMUMS, ["sandwich"]);

// The rules of a query string: {param: [names]} (empty names dropped, each name once).
export function readRules(params) {
  const rules = {};
  RULES.forEach((r) => {
    const names = params.getAll(r.param).filter(Boolean);
    rules[r.param] = names.filter((name, i) => names.indexOf(name) === i);
  });
  return rules;
}

// The rules appended to a URLSearchParams.
export function writeRules(rules, params) {
  RULES.forEach((r) => (rules[r.param] || []).forEach((name) => params.append(r.param, name)));
  return params;
}

// New rules with one more (unchanged when it is there already) or one less.
export function withRule(rules, param, name) {
  const out = copy(rules);
  if (out[param].indexOf(name) < 0) out[param].push(name);
  return out;
}

export function withoutRule(rules, param, name) {
  const out = copy(rules);
  out[param] = out[param].filter((other) => other !== name);
  return out;
}

function copy(rules) {
  const out = {};
  RULES.forEach((r) => { out[r.param] = (rules[r.param] || []).slice(); });
  return out;
}

export function hasRules(rules) {
  return RULES.some((r) => (rules[r.param] || []).length > 0);
}

// The chips of the rules, in the order of RULES: {param, name, text, label}.
export function chips(rules) {
  const out = [];
  RULES.forEach((r) => (rules[r.param] || []).forEach((name) => {
    out.push({param: r.param, name: name, text: r.chip + ": " + name,
      label: "Take back: " + r.chip.toLowerCase() + " " + r.target + " " + name});
  }));
  return out;
}

// What a node of the tree offers (a frame: its symbol's rules and the sandwich; with an image,
// its library's), each {param, name, text}; none for a thread, "(no stack)" or an "other" line.
export function actions(view) {
  if (!view || view.kind !== "frame") return [];
  const out = [];
  RULES.forEach((r) => {
    const name = r.target === "symbol" ? view.symbol : view.image;
    if (!name) return;
    const what = r.target === "symbol" ? name : "library " + name;
    out.push({param: r.param, name: name,
      text: r.verb + " " + what + (r.verb === "Charge" ? " to callers" : "")});
  });
  out.push({param: "sandwich", name: view.symbol, text: "Sandwich of " + view.symbol});
  return out;
}

// A minimum from a form field: a whole number above 0, or "" (none).
export function minimum(text) {
  const value = String(text || "").trim();
  return /^[0-9]+$/.test(value) && Number(value) > 0 ? String(Number(value)) : "";
}

// A page's options on a request (the diff tree's config filters): one value a key, or a list
// (the rules, each name its own `prune_symbol=…`); empty ones left out.
export function setFilters(params, filters) {
  Object.keys(filters || {}).forEach((key) => {
    const value = filters[key];
    if (Array.isArray(value)) value.forEach((one) => { if (one) params.append(key, one); });
    else if (value) params.set(key, value);
  });
  return params;
}
