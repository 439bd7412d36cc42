// Answers a task is still building. A call tree too large to build in a request is built by a
// task: its API answers 202 with {state, progress, retry_after} (and Retry-After) until the tree
// is there. getJSON asks again after that wait until the answer comes, telling `onProgress` how
// far the task is; `isCurrent` (optional) stops asking once the page wants something else (the
// promise then resolves to null). Progress is a bar with its text, shown while waiting. Used by
// the call tree (calltree.js, calltree_views.js) and the diff tree (difftree.js, diffflame.js).
// `percent` and `waitSeconds` are pure: tests/js/pending.test.mjs.
const LONGEST_WAIT = 10; // seconds between two questions at most, whatever the server says
const SHORTEST_WAIT = 0.25;

function wait(seconds) {
  return new Promise(function (resolve) { setTimeout(resolve, seconds * 1000); });
}

// How long to wait before asking again: the Retry-After header, else the answer's retry_after,
// else a second; never less than a quarter of a second nor more than LONGEST_WAIT.
export function waitSeconds(retryAfterHeader, data) {
  const after = Number(retryAfterHeader) || Number(data && data.retry_after) || 1;
  return Math.min(LONGEST_WAIT, Math.max(SHORTEST_WAIT, after));
}

export function getJSON(url, options) {
  options = options || {};
  return fetch(url, {
    credentials: "same-origin",
    headers: {"Accept": "application/json"},
  }).then(function (response) {
    return response.json().then(function (data) {
      if (response.status === 202 && data && data.state) {
        if (options.isCurrent && !options.isCurrent()) return null;
        if (options.onProgress) options.onProgress(data);
        return wait(waitSeconds(response.headers.get("Retry-After"), data)).then(function () {
          if (options.isCurrent && !options.isCurrent()) return null;
          return getJSON(url, options);
        });
      }
      if (!response.ok) throw new Error(data.error || data.detail || ("HTTP " + response.status));
      return data;
    });
  });
}

export function percent(data) {
  return Math.round(Math.max(0, Math.min(1, Number(data.progress) || 0)) * 100);
}

// A progress bar with a line of text, inserted before `before` (or appended to `parent`).
export function Progress(parent, before) {
  this.element = document.createElement("div");
  this.element.className = "pending";
  this.element.setAttribute("role", "status");
  this.element.hidden = true;
  this.bar = document.createElement("progress");
  this.bar.max = 100;
  this.text = document.createElement("span");
  this.element.appendChild(this.bar);
  this.element.appendChild(this.text);
  parent.insertBefore(this.element, before || null);
}

Progress.prototype.show = function (data, what) {
  var done = percent(data);
  this.bar.value = done;
  this.bar.setAttribute("aria-label", what);
  this.text.textContent = data.state === "queued"
    ? what + ": waiting for a worker…"
    : what + "… " + done + " %";
  this.element.dataset.state = data.state;
  this.element.hidden = false;
};

Progress.prototype.hide = function () {
  this.element.hidden = true;
};
