'use strict';
// Summary figures of one run, defined as in seed-experiment.md.

// nearest-rank percentile of a numeric array (q in (0, 100])
function percentile(values, q) {
  if (values.length === 0) return null;
  const s = values.slice().sort((a, b) => a - b);
  const k = Math.max(1, Math.ceil((q / 100) * s.length));
  return s[k - 1];
}

// Upper bound on the request hit rate: prefixes partitioned across workers
// without duplication, each worker holding capacity/prompt prompts
// (seed: 585 blocks = 9,360 tokens = 3.95 prompts of 2,371 tokens).
function upperBound(workers, prefixes, capacityTokens, promptTokens, floorPrompts) {
  let perWorker = capacityTokens / promptTokens;
  if (floorPrompts) perWorker = Math.floor(perWorker);
  return Math.min(1, (workers * perWorker) / prefixes);
}

function round(x, digits) {
  if (x === null || x === undefined || !Number.isFinite(x)) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

// Believed vs actual: of the requests kvroute routed for a predicted hit
// (the chosen server believed to hold a leading block, X-Kvroute-Overlap
// > 0), the share the engine served from its cache (cached_tokens > 0),
// and the false hits (believed, not cached).  null for routers that say
// nothing of what they believed.
function beliefs(ok) {
  const told = ok.filter((r) => typeof r.overlap === 'number' && !Number.isNaN(r.overlap));
  if (told.length === 0) return { believed_hits: null, believed_hit_share: null, false_hits: null };
  const believed = told.filter((r) => r.overlap > 0);
  const held = believed.filter((r) => r.cachedTokens > 0).length;
  return {
    believed_hits: believed.length,
    believed_hit_share: round(believed.length ? held / believed.length : null, 4),
    false_hits: believed.length - held,
  };
}

// The figures of each frontend's share of the requests (--frontends F)
function perFrontend(records, frontends) {
  const out = [];
  for (let f = 0; f < frontends; f++) {
    const rs = records.filter((r) => r && (r.frontend || 0) === f);
    const ok = rs.filter((r) => r.ok);
    out.push(Object.assign({
      frontend: f,
      requests: rs.length,
      errors: rs.length - ok.length,
      request_hit_rate: round(ok.length ? ok.filter((r) => r.cachedTokens > 0).length / ok.length : null, 4),
      ttft_p50_ms: round(percentile(ok.map((r) => r.ttftMs), 50), 1),
      ttft_p99_ms: round(percentile(ok.map((r) => r.ttftMs), 99), 1),
    }, beliefs(ok)));
  }
  return out;
}

// records from client.runLoad; o: router, workers, prefixes, concurrency,
// capacityTokens, promptTokens, frontends (default 1)
function summarise(records, wallMs, o) {
  const ok = records.filter((r) => r.ok);
  const errors = records.length - ok.length;
  const mismatched = ok.filter((r) => r.promptTokens !== r.expectedPromptTokens).length;
  const hits = ok.filter((r) => r.cachedTokens > 0).length;
  const cached = ok.reduce((a, r) => a + r.cachedTokens, 0);
  const prompt = ok.reduce((a, r) => a + r.promptTokens, 0);
  const ttfts = ok.map((r) => r.ttftMs);
  const perPrefix = new Map();
  for (const r of ok) {
    if (!perPrefix.has(r.prefixId)) perPrefix.set(r.prefixId, new Set());
    perPrefix.get(r.prefixId).add(r.engine);
  }
  let enginesSum = 0;
  for (const s of perPrefix.values()) enginesSum += s.size;
  const perEngine = {};
  for (const r of ok) perEngine[r.engine] = (perEngine[r.engine] || 0) + 1;
  return {
    router: o.router,
    workers: o.workers,
    prefixes: o.prefixes,
    concurrency: o.concurrency,
    requests: records.length,
    errors,
    prompt_length_mismatches: mismatched,
    request_hit_rate: round(ok.length ? hits / ok.length : null, 4),
    cached_token_ratio: round(prompt ? cached / prompt : null, 4),
    ttft_p50_ms: round(percentile(ttfts, 50), 1),
    ttft_p99_ms: round(percentile(ttfts, 99), 1),
    requests_per_s: round(ok.length / (wallMs / 1000), 2),
    engines_per_prefix: round(perPrefix.size ? enginesSum / perPrefix.size : null, 2),
    upper_bound_hit_rate: round(upperBound(o.workers, o.prefixes, o.capacityTokens, o.promptTokens, false), 4),
    upper_bound_hit_rate_floor: round(upperBound(o.workers, o.prefixes, o.capacityTokens, o.promptTokens, true), 4),
    requests_per_engine: perEngine,
    ...beliefs(ok),
    frontends: o.frontends || 1,
    per_frontend: (o.frontends || 1) > 1 ? perFrontend(records, o.frontends) : undefined,
    first_error: errors ? records.find((r) => !r.ok).error : null,
    steady: o.skip ? steadyState(records.slice(o.skip)) : undefined,
  };
}

// The figures of the requests after the first `skip` (the caches filled):
// hit rates, TTFT, and requests/s over the window from the first of them
// sent to the last of them finished.
function steadyState(records) {
  const ok = records.filter((r) => r && r.ok);
  if (ok.length === 0) return null;
  const start = Math.min(...ok.map((r) => r.sentMs));
  const end = Math.max(...ok.map((r) => r.sentMs + r.totalMs));
  const prompt = ok.reduce((a, r) => a + r.promptTokens, 0);
  const ttfts = ok.map((r) => r.ttftMs);
  return {
    requests: records.length,
    errors: records.length - ok.length,
    request_hit_rate: round(ok.filter((r) => r.cachedTokens > 0).length / ok.length, 4),
    cached_token_ratio: round(prompt ? ok.reduce((a, r) => a + r.cachedTokens, 0) / prompt : null, 4),
    ttft_p50_ms: round(percentile(ttfts, 50), 1),
    ttft_p99_ms: round(percentile(ttfts, 99), 1),
    requests_per_s: round(end > start ? ok.length / ((end - start) / 1000) : null, 2),
  };
}

// A run where one engine went away (--engine-down): figures of the
// requests sent before it went, while it was away, in the 10 s after it
// came back, and after that; `to_engine` counts those the engine served.
function summarisePhases(records, downMs, upMs, engine) {
  const phases = [
    ['before', (t) => t < downMs],
    ['down', (t) => t >= downMs && t < upMs],
    ['first_10s_back', (t) => t >= upMs && t < upMs + 10000],
    ['later', (t) => t >= upMs + 10000],
  ];
  const out = {};
  for (const [name, within] of phases) {
    const rs = records.filter((r) => within(r.sentMs));
    out[name] = Object.assign(phaseFigures(rs),
      { to_engine: rs.filter((r) => r.ok && r.engine === engine).length });
  }
  return out;
}

// The figures of one phase of a run: its requests (rs), failed or not.
function phaseFigures(rs) {
  const ok = rs.filter((r) => r.ok);
  const prompt = ok.reduce((a, r) => a + r.promptTokens, 0);
  return {
    requests: rs.length,
    errors: rs.length - ok.length,
    request_hit_rate: round(ok.length ? ok.filter((r) => r.cachedTokens > 0).length / ok.length : null, 4),
    cached_token_ratio: round(prompt ? ok.reduce((a, r) => a + r.cachedTokens, 0) / prompt : null, 4),
    ttft_p50_ms: round(percentile(ok.map((r) => r.ttftMs), 50), 1),
    ttft_p99_ms: round(percentile(ok.map((r) => r.ttftMs), 99), 1),
  };
}

// A run with a burst of a new prefix (--burst): the requests before it,
// the burst's own (requests from..to-1, all of the new type), and those
// after, by send order; and which engines served the burst.
function summariseBurst(records, from, to) {
  const out = {};
  for (const [name, within] of [['before', (i) => i < from], ['burst', (i) => i >= from && i < to],
    ['after', (i) => i >= to]]) {
    out[name] = phaseFigures(records.filter((r, i) => r && within(i)));
  }
  const served = {};
  for (let i = from; i < to && i < records.length; i++) {
    const r = records[i];
    if (r && r.ok) served[r.engine] = (served[r.engine] || 0) + 1;
  }
  out.burst.served_by = served;
  return out;
}

module.exports = { percentile, upperBound, summarise, summarisePhases, summariseBurst, steadyState, beliefs, perFrontend };
