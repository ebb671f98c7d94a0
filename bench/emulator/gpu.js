'use strict';
// A GPU that one or more engines run their scheduler steps on, simulated in
// model time and kept in step with a clock (model_clock.js).
//
// A step is a CPU phase (the engine's own scheduling, sampling and output
// work: never shared) followed by a GPU phase (the forward pass). The GPU
// phases of the engines on one GPU share it by processor sharing: with n
// of them running, each advances at 1 / (1 + share x (n - 1)) of the GPU's
// speed. share 1 is time-slicing, which is what two CUDA contexts without
// MPS get; 0 would be two independent GPUs.
//
// Why a discrete-event simulation rather than one timer per step: a step's
// end is an absolute model time. When the process is late (a busy event
// loop), the late steps still end, and the next ones start, at their model
// times, so lateness delays what the clients see but never accumulates into
// the engine's speed. How late each step's end was processed is recorded
// (lateness, model ms) so a run can tell whether its clock held.

const EPS = 1e-9;

class Gpu {
  // clock: { now() model ms, after(ms, fn) handle, cancel(handle) };
  // o: speed (work per model ms, 1 = the reference GPU), share (0..1)
  constructor(clock, o = {}) {
    this.clock = clock;
    this.speed = o.speed === undefined ? 1 : o.speed;
    // the speed of a step's fixed work (the host's CPU phase, the weights
    // and KV reads of a memory-bound decode) against the reference node;
    // speed is the GPU's compute, what a prefill token costs
    this.stepSpeed = o.stepSpeed === undefined ? this.speed : o.stepSpeed;
    this.share = o.share === undefined ? 1 : o.share;
    this.jobs = [];          // {owner, cpuEnd, gpuLeft, done}
    this.last = clock.now(); // model time up to which jobs have advanced
    this.timer = null;
    this.inLoop = false;
    this.lateness = [];      // model ms, one per finished step (bounded)
    this.latenessCount = 0;
    this.busyMs = 0;         // model ms with at least one GPU phase running
  }

  _inGpu(j) {
    return j.cpuEnd <= this.last + EPS;
  }

  _rate() {
    let n = 0;
    for (const j of this.jobs) if (this._inGpu(j)) n++;
    return n === 0 ? 0 : 1 / (1 + this.share * (n - 1));
  }

  // the model time of the next phase change or step end
  _nextEvent() {
    const r = this._rate();
    let t = Infinity;
    for (const j of this.jobs) {
      if (!this._inGpu(j)) t = Math.min(t, j.cpuEnd);
      else if (r > 0) t = Math.min(t, this.last + j.gpuLeft / r);
    }
    return t;
  }

  _advanceTo(t) {
    if (t <= this.last) return;
    const r = this._rate();
    if (r > 0) {
      this.busyMs += t - this.last;
      for (const j of this.jobs) if (this._inGpu(j)) j.gpuLeft -= (t - this.last) * r;
    }
    this.last = t;
  }

  // Runs every phase change and step end up to model time `until`, in
  // order; a step's done() may start the engine's next step at that time.
  _process(until) {
    this.inLoop = true;
    for (;;) {
      const t = this._nextEvent();
      if (t > until + EPS) break;
      this._advanceTo(t);
      const done = [];
      this.jobs = this.jobs.filter((j) => {
        if (this._inGpu(j) && j.gpuLeft <= EPS * 1000) {
          done.push(j);
          return false;
        }
        return true;
      });
      for (const j of done) {
        this._recordLateness(until - t);
        j.done();
      }
    }
    this.inLoop = false;
  }

  _recordLateness(ms) {
    this.latenessCount++;
    if (this.lateness.length < 100000) this.lateness.push(ms);
    else this.lateness[this.latenessCount % 100000] = ms;
  }

  _arm() {
    if (this.timer) this.clock.cancel(this.timer);
    this.timer = null;
    const t = this._nextEvent();
    if (t === Infinity) return;
    this.timer = this.clock.after(t - this.clock.now(), () => {
      this.timer = null;
      this._sync();
      this._arm();
    });
  }

  _sync() {
    const now = Math.max(this.clock.now(), this.last);
    this._process(now);
    this._advanceTo(now);
  }

  // One step: cpuMs of the engine's own time, then gpuMs of work on this
  // GPU at speed 1; done() at its end. Called from a done() the step starts
  // when the previous one ended, otherwise now.
  // (Inside the loop the timer is re-armed by the loop's caller.)
  run(owner, cpuMs, gpuMs, done) {
    this._push(owner, cpuMs, gpuMs / this.speed, done);
  }

  // One scheduler step from its work at the reference node's speeds (µs):
  // cpu (the engine's own), step (the GPU's per-step work: weights,
  // launches, decode reads) and prefill (uncached prompt tokens).
  runStep(owner, w, done) {
    this._push(owner, w.cpu / this.stepSpeed / 1000,
      (w.step / this.stepSpeed + w.prefill / this.speed + (w.load || 0)) / 1000, done);
  }

  // a step of cpuMs, then gpuMs of this GPU's time when it runs alone
  _push(owner, cpuMs, gpuMs, done) {
    if (!this.inLoop) this._sync();
    this.jobs.push({ owner, cpuEnd: this.last + cpuMs, gpuLeft: gpuMs, done });
    if (!this.inLoop) this._arm();
  }

  // An engine that stops (or goes down) leaves the GPU to its siblings.
  cancel(owner) {
    if (!this.inLoop) this._sync();
    this.jobs = this.jobs.filter((j) => j.owner !== owner);
    if (!this.inLoop) this._arm();
  }

  // step ends processed so far and how late (model ms): p50, p99, max
  latenessSummary() {
    const a = this.lateness.slice().sort((x, y) => x - y);
    const q = (p) => (a.length ? a[Math.min(a.length - 1, Math.ceil(p * a.length) - 1)] : 0);
    return { steps: this.latenessCount, p50: q(0.5), p99: q(0.99), max: a.length ? a[a.length - 1] : 0 };
  }
}

module.exports = { Gpu };
