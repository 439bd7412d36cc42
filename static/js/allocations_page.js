// The Allocations List page: selecting a row (click, Enter, or the arrow keys) opens the
// Extended Detail pane with its whole stack, innermost frame first, and a link that opens the
// call tree along that stack's path. The selected row is kept in the URL's hash (#sel=…).
import {stackDetail, treeLink} from "./allocations_detail.js";

const table = document.getElementById("allocations");
const pane = document.getElementById("extended-detail");

function rows() {
  return Array.from(table.querySelectorAll("tbody tr[data-snapshot]"));
}

function apiUrl(row) {
  const base = pane.dataset.api || pane.dataset.apiBase.replace("/0/stack", "/" + row.dataset.snapshot + "/stack");
  return base + "?id=" + encodeURIComponent(row.dataset.stack);
}

function show(row, frames) {
  const body = pane.querySelector(".ed-body");
  const list = pane.querySelector(".ed-frames");
  const detail = stackDetail(frames);
  list.textContent = "";
  detail.items.forEach((item) => {
    const li = document.createElement("li");
    if (item.responsible) li.className = "responsible";
    if (item.system) li.classList.add("system");
    const name = document.createElement("span");
    name.className = "ed-symbol mono";
    name.textContent = item.label;
    li.appendChild(name);
    if (item.where) {
      const where = document.createElement("span");
      where.className = "ed-file mono";
      where.textContent = item.where;
      li.appendChild(where);
    }
    const image = document.createElement("span");
    image.className = "ed-image muted";
    image.textContent = item.image;
    li.appendChild(image);
    list.appendChild(li);
  });
  const cells = row.querySelectorAll("td");
  pane.querySelector(".ed-what").textContent = frames.length + " frames · " +
    Array.from(cells).slice(0, 4).map((c) => c.textContent.trim()).join(" · ");
  const link = pane.querySelector(".ed-tree");
  link.href = treeLink(row.dataset.tree, detail.nodes);
  pane.querySelector(".ed-empty").hidden = true;
  body.hidden = false;
}

function showMessage(text) {
  pane.querySelector(".ed-body").hidden = true;
  const empty = pane.querySelector(".ed-empty");
  empty.textContent = text;
  empty.hidden = false;
}

let asked = 0;
function select(row, focus) {
  rows().forEach((r) => r.removeAttribute("aria-selected"));
  row.setAttribute("aria-selected", "true");
  pane.classList.add("open");
  if (focus) row.focus();
  const index = rows().indexOf(row);
  window.history.replaceState(null, "", window.location.pathname + window.location.search + "#sel=" + index);
  if (!row.dataset.stack) {
    showMessage("These allocations were recorded without a stack.");
    return;
  }
  const mine = ++asked;
  showMessage("Loading the stack…");
  fetch(apiUrl(row), {headers: {Accept: "application/json"}, credentials: "same-origin"})
    .then((response) => (response.ok ? response.json() : Promise.reject(response.status)))
    .then((data) => { if (mine === asked) show(row, data.frames); })
    .catch(() => { if (mine === asked) showMessage("The stack could not be read."); });
}

if (table && pane) {
  table.addEventListener("click", (event) => {
    if (event.target.closest("a")) return;
    const row = event.target.closest("tr[data-snapshot]");
    if (row) select(row, false);
  });
  table.addEventListener("keydown", (event) => {
    const row = event.target.closest("tr[data-snapshot]");
    if (!row) return;
    const all = rows();
    const index = all.indexOf(row);
    if (event.key === "Enter" || event.key === " ") { select(row, false); event.preventDefault(); }
    else if (event.key === "ArrowDown" && index + 1 < all.length) { select(all[index + 1], true); event.preventDefault(); }
    else if (event.key === "ArrowUp" && index > 0) { select(all[index - 1], true); event.preventDefault(); }
  });
  pane.querySelector(".ed-close").addEventListener("click", () => pane.classList.remove("open"));
  const match = /^#sel=(\d+)$/.exec(window.location.hash);
  const initial = match ? rows()[Number(match[1])] : null;
  if (initial) select(initial, false);
}
