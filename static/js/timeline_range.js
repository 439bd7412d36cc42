// The timeline's inspection range (pure: plain data in and out; timeline.js applies it).
// A range dragged on the chart (in seconds, either way round) becomes the whole time buckets it
// overlaps, in ms on the upload's clock, as the server resolves it
// (memdash/allocations/logic/timeline.py `Buckets.span`); then the page's query with it.

// {from_ms, to_ms} of the buckets [x0, x1] (seconds) overlaps, or null outside the run.
// Bucket i is [start + i·width, start + (i+1)·width).
export function snapRange(x0, x1, buckets) {
  const start = buckets.startMs, width = buckets.bucketMs, count = buckets.count;
  let low = Math.min(x0, x1) * 1000, high = Math.max(x0, x1) * 1000;
  const end = start + count * width;
  if (!(width > 0) || high < start || low > end) return null;
  const first = Math.min(count - 1, Math.max(0, Math.floor((low - start) / width)));
  const last = Math.max(first, Math.min(count - 1, Math.ceil((high - start) / width) - 1));
  return {from_ms: roundMs(start + first * width), to_ms: roundMs(start + (last + 1) * width)};
}

// {from_ms, to_ms} of the points (times in ms, in order: a massif run's snapshots) that
// [x0, x1] (seconds) holds, or null when it holds none.
export function snapToPoints(x0, x1, times) {
  const low = Math.min(x0, x1) * 1000, high = Math.max(x0, x1) * 1000;
  const inside = (times || []).filter((t) => t >= low && t <= high);
  if (!inside.length) return null;
  return {from_ms: inside[0], to_ms: inside[inside.length - 1]};
}

// ms to at most 3 decimals (a microsecond), as the URL carries them: `1250`, `12.5`
function roundMs(ms) {
  return Math.round(ms * 1000) / 1000;
}

// The page's query string with the range set (and back to the table's first page).
export function withRange(search, range) {
  const params = new URLSearchParams(search);
  params.delete("page");
  params.set("from_ms", String(range.from_ms));
  params.set("to_ms", String(range.to_ms));
  return "?" + params.toString();
}
