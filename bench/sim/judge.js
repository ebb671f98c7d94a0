'use strict';
// Issue #18's floors judged on one policy's rows against Dynamo's and the
// partition's at the same points (rows of bench/sim/floors.js: w, p, c,
// policy and the medians of its figures). floors.js prints it;
// worlds.js puts it beside each world's fit.
//
//   floor 1: requests/s at least 0.98x Dynamo's at every point, 1.10x at
//            the headline points (6w/24/c16, 3w/24/c8)
//   floor 2: TTFT p99 at most Dynamo's at every point with 7+ types, p50
//            at most 1.1x
//   floor 3: cached-token ratio against the partition's at the judged
//            points (6w/24 c4-c16, 3w/24/c8)

const HEADLINE = [[6, 24, 16], [3, 24, 8]];
const CACHED = [[6, 24, 4], [6, 24, 8], [6, 24, 16], [3, 24, 8]];

const geomean = (xs) => (xs.length ? Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length) : NaN);

// rows: every policy's; name: the policy judged; peers: others whose
// requests/s it is compared with (geometric mean of its ratios to theirs)
function judge(rows, name, peers = []) {
  const at = (w, p, c, policy) => rows.find((r) => r.w === w && r.p === p && r.c === c && r.policy === policy);
  const f1 = (x) => (Math.round(x * 10) / 10).toFixed(1);
  const mine = rows.filter((r) => r.policy === name && at(r.w, r.p, r.c, 'dynamo'));
  const out = { policy: name, points: mine.length, rps_met: 0, p99_met: 0, p99_points: 0, p50_met: 0,
    rps_ratio: [], misses: [], headline: {}, cached_vs_partition: {}, vs: {} };
  const ratios = [];
  for (const r of mine) {
    const d = at(r.w, r.p, r.c, 'dynamo');
    const ratio = r.requests_per_s / d.requests_per_s;
    ratios.push(ratio);
    if (ratio >= 0.98) out.rps_met++;
    else out.misses.push(`rps ${r.w}w/${r.p}/c${r.c} ${ratio.toFixed(3)}`);
    if (r.p >= 7) {
      out.p99_points++;
      if (r.ttft_p99_ms <= d.ttft_p99_ms) out.p99_met++;
      else out.misses.push(`p99 ${r.w}w/${r.p}/c${r.c} ${f1(r.ttft_p99_ms)} vs ${f1(d.ttft_p99_ms)}`);
    }
    if (r.ttft_p50_ms <= 1.1 * d.ttft_p50_ms) out.p50_met++;
    else out.misses.push(`p50 ${r.w}w/${r.p}/c${r.c} ${f1(r.ttft_p50_ms)} vs ${f1(d.ttft_p50_ms)}`);
  }
  out.rps_ratio = ratios.length ? [Math.min(...ratios), Math.max(...ratios)] : [];
  out.rps_geomean = geomean(ratios);
  for (const [w, p, c] of HEADLINE) {
    const r = at(w, p, c, name);
    if (r) out.headline[`${w}w/${p}/c${c}`] = r.requests_per_s / at(w, p, c, 'dynamo').requests_per_s;
  }
  for (const [w, p, c] of CACHED) {
    const r = at(w, p, c, name);
    const part = at(w, p, c, 'partition');
    if (r && part) out.cached_vs_partition[`${w}w/${p}/c${c}`] = r.cached_token_ratio / part.cached_token_ratio;
  }
  for (const peer of peers) {
    const xs = mine.filter((r) => at(r.w, r.p, r.c, peer)).map((r) => r.requests_per_s / at(r.w, r.p, r.c, peer).requests_per_s);
    if (xs.length) out.vs[peer] = { points: xs.length, ahead: xs.filter((x) => x > 1).length, geomean: geomean(xs) };
  }
  return out;
}

// floors.js's summary line of one policy
function summaryLine(j) {
  const fx = (o, unit) => Object.entries(o).map(([k, x]) => `${k} ${x.toFixed(3)}${unit}`).join(', ');
  return `${j.policy}: req/s >= 0.98x Dynamo at ${j.rps_met}/${j.points}; ` +
    `>= 1.10x at the headline points: ${fx(j.headline, 'x')}; ` +
    `p99 <= Dynamo at ${j.p99_met}/${j.p99_points} points with 7+ types; p50 <= 1.1x at ${j.p50_met}/${j.points}; ` +
    `cached-token ratio / partition's: ${fx(j.cached_vs_partition, '')}\n  misses: ${j.misses.join('; ')}\n`;
}

module.exports = { judge, summaryLine, geomean, HEADLINE, CACHED };
