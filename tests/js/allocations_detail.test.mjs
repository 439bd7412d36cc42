// The Extended Detail pane's reading of a stack (static/js/allocations_detail.js).
import assert from "node:assert/strict";
import {test} from "node:test";

import {stackDetail, treeLink} from "../../static/js/allocations_detail.js";

// As GET /api/v1/snapshots/<id>/stack answers the spec example's stack 3: innermost first.
const FRAMES = [
  {node: "-4", label: "-[MessageCell initWithStyle:]", image: "", file: "MessageCell.m", line: 42, system: false},
  {node: "3", label: "-[ChatViewController viewDidLoad]", image: "", file: "", line: null, system: false},
  {node: "2", label: "UIApplicationMain", image: "UIKitCore", file: "", line: null, system: true},
  {node: "1", label: "main", image: "", file: "main.m", line: null, system: false},
];

test("frames keep their order; the first app frame is the responsible caller", () => {
  const detail = stackDetail(FRAMES);
  assert.deepEqual(detail.items.map((i) => i.label), FRAMES.map((f) => f.label));
  assert.deepEqual(detail.items.map((i) => i.responsible), [true, false, false, false]);
  assert.deepEqual(detail.items.map((i) => i.where), ["MessageCell.m:42", "", "", "main.m"]);
});

test("a stack of system frames only has no responsible caller", () => {
  const detail = stackDetail([{...FRAMES[2]}, {...FRAMES[2], node: "9"}]);
  assert.deepEqual(detail.items.map((i) => i.responsible), [false, false]);
});

test("the call tree's link opens the path from the root and selects the row's node", () => {
  const {nodes} = stackDetail(FRAMES);
  assert.deepEqual(nodes, ["1", "2", "3", "-4"]);
  assert.equal(treeLink("/snapshots/5/calltree/?category_hash=7", nodes),
    "/snapshots/5/calltree/?category_hash=7#open=1,2,3&sel=-4");
  assert.equal(treeLink("/t/", []), "/t/");
});
