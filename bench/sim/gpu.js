'use strict';
// Engines that share one GPU (the seed ran two workers per GPU): while
// both have a step running, each runs at 1 / (1 + share) of its speed
// (processor sharing; share 1 = an even split, 0 = independent GPUs).

class Gpu {
  constructor(clock, share) {
    this.clock = clock;
    this.share = share;
    this.jobs = [];        // {left: ms of work, done: fn}
    this.timer = null;
    this.last = 0;
  }

  rate() {
    return 1 / (1 + this.share * (this.jobs.length - 1));
  }

  advance() {
    const t = this.clock();
    if (this.jobs.length > 0) {
      const r = this.rate();
      for (const j of this.jobs) j.left -= (t - this.last) * r;
    }
    this.last = t;
  }

  arm() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.jobs.length === 0) return;
    const r = this.rate();
    let first = Infinity;
    for (const j of this.jobs) first = Math.min(first, j.left / r);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.advance();
      const done = this.jobs.filter((j) => j.left <= 1e-9);
      this.jobs = this.jobs.filter((j) => j.left > 1e-9);
      this.arm();
      for (const j of done) j.done();
    }, first);
  }

  run(ms, done) {
    this.advance();
    this.jobs.push({ left: ms, done });
    this.arm();
  }
}

// A scheduler step on a shared GPU: the emulator's _step with the step's
// time run through gpu.run() instead of one timer.
function runStepsOn(scheduler, gpu) {
  scheduler._step = function step() {
    if (this.running.length === 0 && this.waiting.length === 0) return;
    const plan = this.schedule();
    this.onScheduled();
    if (plan.scheduled.length === 0) return;
    this.busy = true;
    this.stepCount++;
    const ms = this.stepDurationUs(plan.prefillTokens, plan.decodes) / 1000 / this.t.timeScale;
    gpu.run(ms, () => {
      this._complete(plan.scheduled);
      this.busy = false;
      if (!this.stopped) this._step();
    });
  };
}

module.exports = { Gpu, runStepsOn };
