'use strict';
// A virtual clock for the policy simulator: replaces the process's
// setTimeout, clearTimeout and setImmediate with an event queue that
// run() drains in time order, so the emulator's own scheduler runs
// thousands of requests in a fraction of a second and gives the same
// figures every time. Load it only in a process that does nothing else.

const queue = [];   // binary heap of [time ms, sequence, fn]
let now = 0;
let seq = 0;

function before(a, b) {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

function push(t, fn) {
  queue.push([t, seq++, fn]);
  let i = queue.length - 1;
  while (i > 0) {
    const p = (i - 1) >> 1;
    if (!before(queue[i], queue[p])) break;
    [queue[p], queue[i]] = [queue[i], queue[p]];
    i = p;
  }
}

function pop() {
  const top = queue[0];
  const last = queue.pop();
  if (queue.length > 0) {
    queue[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < queue.length && before(queue[l], queue[m])) m = l;
      if (r < queue.length && before(queue[r], queue[m])) m = r;
      if (m === i) break;
      [queue[m], queue[i]] = [queue[i], queue[m]];
      i = m;
    }
  }
  return top;
}

global.setTimeout = (fn, ms) => {
  const handle = { cancelled: false };
  push(now + Math.max(0, ms || 0), () => { if (!handle.cancelled) fn(); });
  return handle;
};
global.clearTimeout = (handle) => { if (handle) handle.cancelled = true; };
global.setImmediate = (fn) => push(now, fn);

// Run every pending event; returns the time of the last one.
function drain() {
  while (queue.length > 0) {
    const [t, , fn] = pop();
    now = t;
    fn();
  }
  return now;
}

function reset() {
  queue.length = 0;
  now = 0;
  seq = 0;
}

module.exports = { now: () => now, drain, reset };
