// What the Extended Detail pane shows of a stack (pure, tested by node --test): the frames as
// the API answers them (innermost first), each with its `file:line` when known and whether it
// is the responsible caller (the first frame outside a system image); and the call tree's link
// that opens the stack's path (the tree's node ids are the stack's nodes, outermost first).
import {formatHash} from "./tree_state.js";

export function stackDetail(frames) {
  const responsible = frames.findIndex((f) => !f.system);
  return {
    items: frames.map((f, i) => ({
      label: f.label,
      image: f.image,
      system: f.system,
      where: f.file ? f.file + (f.line ? ":" + f.line : "") : "",
      responsible: i === responsible,
    })),
    nodes: frames.map((f) => f.node).reverse(),
  };
}

export function treeLink(base, nodes) {
  if (!nodes.length) return base;
  return base + formatHash({open: nodes.slice(0, -1), sel: nodes[nodes.length - 1]});
}
