'use strict';
// Model time for the emulator's GPUs (gpu.js). The real clock runs model
// time at --time-scale times wall time from a monotonic origin; the policy
// simulator's virtual clock (bench/sim/clock.js) runs it on an event queue.
// Timers are set for an absolute model time, so a late wake-up never
// shifts the ones after it.

const { performance } = require('node:perf_hooks');

function realClock(timeScale) {
  const origin = performance.now();
  return {
    timeScale,
    now: () => (performance.now() - origin) * timeScale,
    // Node clamps timers to >= 1 ms of wall time; a step shorter than that
    // at a high time scale is simply processed late and counted as such
    after: (ms, fn) => setTimeout(fn, Math.max(0, ms / timeScale)),
    cancel: (h) => clearTimeout(h),
  };
}

// timers of the current process, whatever setTimeout is (the simulator
// replaces it with its virtual clock's)
function processClock(now) {
  return {
    timeScale: 1,
    now,
    after: (ms, fn) => setTimeout(fn, Math.max(0, ms)),
    cancel: (h) => clearTimeout(h),
  };
}

module.exports = { realClock, processClock };
