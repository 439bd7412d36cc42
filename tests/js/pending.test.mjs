// static/js/pending.js: how far a task is, how long to wait before asking again, and getJSON's
// asking again while the server answers 202 (against a stand-in for fetch that answers as the
// call tree API does: 202 with {state, progress, retry_after} and Retry-After, then 200).
import assert from "node:assert/strict";
import {afterEach, test} from "node:test";

import {getJSON, percent, waitSeconds} from "../../static/js/pending.js";

test("percent: the task's progress, 0 to 100, rounded", () => {
  assert.equal(percent({progress: 0.456}), 46);
  assert.equal(percent({progress: "0.5"}), 50);
  assert.equal(percent({progress: 1.7}), 100);
  assert.equal(percent({progress: -0.2}), 0);
  assert.equal(percent({}), 0);
});

test("waitSeconds: Retry-After first, then retry_after, then a second; kept within bounds", () => {
  assert.equal(waitSeconds("3", {retry_after: 7}), 3);
  assert.equal(waitSeconds(null, {retry_after: 2}), 2);
  assert.equal(waitSeconds(null, {}), 1);
  assert.equal(waitSeconds("0.1", {}), 0.25);
  assert.equal(waitSeconds("60", {}), 10);
  assert.equal(waitSeconds("soon", {retry_after: 4}), 4);
});

const realFetch = globalThis.fetch;
afterEach(() => { globalThis.fetch = realFetch; });

// fetch answering these [status, body, headers] in turn, recording the URLs asked
function answering(...answers) {
  const asked = [];
  globalThis.fetch = async (url) => {
    asked.push(url);
    const [status, body, headers] = answers.shift();
    return new Response(JSON.stringify(body), {status, headers: headers || {}});
  };
  return asked;
}

test("getJSON asks again while the task builds, telling how far it is", async () => {
  const asked = answering(
    [202, {state: "running", progress: 0.5, retry_after: 5}, {"Retry-After": "0.25"}],
    [200, {children: []}],
  );
  const seen = [];
  const data = await getJSON("/api/tree", {onProgress: (state) => seen.push(percent(state))});
  assert.deepEqual(data, {children: []});
  assert.deepEqual(asked, ["/api/tree", "/api/tree"]);
  assert.deepEqual(seen, [50]);
});

test("getJSON stops asking once the answer is no longer wanted", async () => {
  const asked = answering([202, {state: "queued", progress: 0}, {"Retry-After": "0.25"}]);
  let wanted = true;
  const data = await getJSON("/api/tree", {
    isCurrent: () => wanted,
    onProgress: () => { wanted = false; },
  });
  assert.equal(data, null);
  assert.equal(asked.length, 1);
});

test("getJSON turns an error answer into an error with the server's words", async () => {
  answering([400, {error: "unknown option: flatten=2"}]);
  await assert.rejects(getJSON("/api/tree"), {message: "unknown option: flatten=2"});
  answering([404, {detail: "Not found."}]);
  await assert.rejects(getJSON("/api/tree"), {message: "Not found."});
});
