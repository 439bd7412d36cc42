// A tree's state in the address, so a reload or a shared link opens the same path:
// `#view=<name>&open=<id>,<id>&sel=<id>` (ids are URL-safe: digits, base64url, `t`, `.`, `~`;
// they are encoded anyway). Pure (strings in, strings out): tests/js/tree_state.test.mjs.
// tree.js reads and writes window.location with these.

// {open: [ids, parents first], sel: id or "", view: name or ""} of a hash ("#..." or "").
export function parseHash(hash) {
  const state = {open: [], sel: "", view: ""};
  hash.replace(/^#/, "").split("&").forEach((part) => {
    const eq = part.indexOf("=");
    if (eq < 0) return;
    const key = part.slice(0, eq);
    const value = part.slice(eq + 1);
    // each id decoded after the split: an encoded comma stays inside its id
    if (key === "open") state.open = value ? value.split(",").map(decodeURIComponent) : [];
    else if (key === "sel" || key === "view") state[key] = decodeURIComponent(value);
  });
  return state;
}

// The hash of a state ("" when there is nothing to keep): the view, the open nodes, the selection.
export function formatHash(state) {
  const parts = [];
  if (state.view) parts.push("view=" + encodeURIComponent(state.view));
  if (state.open && state.open.length) {
    parts.push("open=" + state.open.map(encodeURIComponent).join(","));
  }
  if (state.sel) parts.push("sel=" + encodeURIComponent(state.sel));
  return parts.length ? "#" + parts.join("&") : "";
}
