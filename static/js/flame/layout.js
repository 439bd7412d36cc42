// A flame graph's geometry (an icicle: the root on top, each node as wide as its value), apart
// from its colours (colours.js) and its painting (paint.js), as Grafana's flame graph keeps them.
// Pure: plain columns in, typed arrays out; tests/js/flame_layout.test.mjs.
//
// `data`: the columns the server sends, parents before their children: ids, parents ("" for a
// root), values, and branchvalues: "total" (a node's value holds its children's) or "remainder"
// (a node's value is what it has beyond them).

// Each node's box in units of the width (x0, x1 from 0 to 1) and its depth; `order` lists the
// nodes parents first (breadth first), `levels` how many rows the graph has. `flip`: the root at
// the bottom (a sandwich's callers, the function next to its callees below).
export function layout(data, flip) {
  const n = data.ids.length, index = {}, children = [], roots = [];
  for (let i = 0; i < n; i++) { index[data.ids[i]] = i; children.push([]); }
  for (let i = 0; i < n; i++) {
    const parent = data.parents[i];
    if (parent === "" || !(parent in index)) roots.push(i);
    else children[index[parent]].push(i);
  }
  const size = data.values.slice();
  if (data.branchvalues === "remainder") { // children come after their parent: sum backwards
    for (let i = n - 1; i >= 0; i--) {
      if (data.parents[i] in index) size[index[data.parents[i]]] += size[i];
    }
  }
  const x0 = new Float64Array(n), x1 = new Float64Array(n), depth = new Int32Array(n);
  let total = 0;
  roots.forEach((r) => { total += size[r]; });
  const queue = [];
  let at = 0;
  roots.forEach((r) => { // roots of no weight share the width evenly
    x0[r] = at; at += total ? size[r] / total : 1 / roots.length; x1[r] = at;
    queue.push(r);
  });
  let deepest = 0;
  for (let q = 0; q < queue.length; q++) {
    const node = queue[q], span = x1[node] - x0[node];
    const inside = size[node] || 1;
    let left = x0[node];
    children[node].forEach((c) => {
      depth[c] = depth[node] + 1;
      if (depth[c] > deepest) deepest = depth[c];
      x0[c] = left; left += span * size[c] / inside; x1[c] = left;
      queue.push(c);
    });
  }
  if (flip) for (let i = 0; i < n; i++) depth[i] = deepest - depth[i];
  return {x0, x1, depth, levels: deepest + 1, order: queue};
}

// The node at `x` (0 to 1 across the width) on row `level` (0: the root's), or -1.
export function nodeAt(boxes, x, level) {
  for (let k = 0; k < boxes.order.length; k++) {
    const i = boxes.order[k];
    if (boxes.depth[i] === level && boxes.x0[i] <= x && x < boxes.x1[i]) return i;
  }
  return -1;
}
