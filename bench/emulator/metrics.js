'use strict';
// Prometheus text exposition with vLLM's metric names (counters carry the
// _total suffix on the sample line, as prometheus_client writes them),
// plus kvemu_* metrics of the emulator itself. With --flavour sglang the
// load gauges are SGLang's instead (sglang:num_running_reqs,
// sglang:num_queue_reqs, sglang:token_usage, with SGLang's labels), as
// docs/engine-metrics.md lists them; the vLLM counters stay, for the
// load generator's preemption and hit-rate figures.

const { ITL_BUCKETS_S, PREFILL_BUCKETS_S, TOKEN_BUCKETS } = require('./scheduler');

// a Prometheus histogram: cumulative buckets, +Inf, _sum and _count
function histogram(lines, name, help, labels, h, sum, bounds = ITL_BUCKETS_S) {
  lines.push(`# HELP ${name} ${help}`);
  lines.push(`# TYPE ${name} histogram`);
  const inner = labels.slice(1, -1);
  bounds.forEach((le, i) => {
    lines.push(`${name}_bucket{${inner},le="${le.toFixed(3).replace(/0+$/, '').replace(/\.$/, '.0')}"} ${h.buckets[i]}`);
  });
  lines.push(`${name}_bucket{${inner},le="+Inf"} ${h.count}`);
  lines.push(`${name}_sum${labels} ${sum}`);
  lines.push(`${name}_count${labels} ${h.count}`);
}

function renderMetrics(engine) {
  const model = engine.o.model.replace(/["\\\n]/g, '_');
  const label = `{model_name="${model}",engine="${engine.name}"}`;
  const s = engine.scheduler;
  const c = engine.cache;
  const lines = [];
  const metric = (name, type, help, value, sample, labels = label) => {
    lines.push(`# HELP ${name} ${help}`);
    lines.push(`# TYPE ${name} ${type}`);
    lines.push(`${sample || name}${labels} ${value}`);
  };
  if (engine.o.flavour === 'sglang') {
    const sg = `{engine_type="unified",model_name="${model}",pp_rank="0",tp_rank="0"}`;
    const gauge = (name, help, value) => metric(name, 'gauge', help, value, name, sg);
    gauge('sglang:num_running_reqs', 'The number of running requests.', s.running.length);
    gauge('sglang:num_queue_reqs', 'The number of requests in the waiting queue.', s.waiting.length);
    gauge('sglang:token_usage', 'The token usage.', c.usage());
    histogram(lines, 'sglang:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.',
      sg, s.itl, s.itl.sumMs / 1000);
  } else {
    metric('vllm:num_requests_running', 'gauge', 'Number of requests in model execution batches.',
      s.running.length);
    metric('vllm:num_requests_waiting', 'gauge', 'Number of requests waiting to be processed.',
      s.waiting.length);
    metric('vllm:gpu_cache_usage_perc', 'gauge', 'GPU KV-cache usage. 1 means 100 percent usage.',
      c.usage());
    metric('vllm:kv_cache_usage_perc', 'gauge', 'KV-cache usage. 1 means 100 percent usage.',
      c.usage());
    // model time, as every figure of the emulator
    histogram(lines, 'vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.',
      label, s.itl, s.itl.sumMs / 1000);
    // what a prefill costs there: the time from a request's first
    // scheduling to its first token, and the prompt tokens it computed
    histogram(lines, 'vllm:request_prefill_time_seconds', 'Histogram of time spent in PREFILL phase for request.',
      label, s.prefill, s.prefill.sumMs / 1000, PREFILL_BUCKETS_S);
    histogram(lines, 'vllm:request_prefill_kv_computed_tokens',
      'Histogram of new KV tokens computed during prefill (excluding cached tokens).',
      label, s.prefillComputed, s.prefillComputed.sum, TOKEN_BUCKETS);
  }
  metric('vllm:prefix_cache_queries', 'counter',
    'Prefix cache queries, in terms of number of queried tokens.', c.queries,
    'vllm:prefix_cache_queries_total');
  metric('vllm:prefix_cache_hits', 'counter',
    'Prefix cache hits, in terms of number of cached tokens.', c.hits,
    'vllm:prefix_cache_hits_total');
  metric('vllm:prompt_tokens', 'counter', 'Number of prefill tokens processed.',
    engine.promptTokensTotal, 'vllm:prompt_tokens_total');
  metric('vllm:generation_tokens', 'counter', 'Number of generation tokens processed.',
    engine.generationTokensTotal, 'vllm:generation_tokens_total');
  metric('vllm:num_preemptions', 'counter', 'Cumulative number of preemptions.',
    s.preemptionCount, 'vllm:num_preemptions_total');
  metric('kvemu_requests', 'counter', 'Generation requests accepted by this emulated engine.',
    engine.requestsTotal, 'kvemu_requests_total');
  metric('kvemu_requests_finished', 'counter', 'Generation requests finished or aborted.',
    engine.requestsFinished, 'kvemu_requests_finished_total');
  metric('kvemu_steps', 'counter', 'Scheduler steps run.', s.stepCount, 'kvemu_steps_total');
  metric('kvemu_cache_blocks', 'gauge', 'KV cache capacity in blocks.', c.numBlocks);
  metric('kvemu_free_blocks', 'gauge', 'Blocks in the free queue (including cached ones).',
    c.numFree());
  // the emulator's own clock: how late step ends were processed, model ms
  // (bench/README.md, "A trustworthy instrument")
  const late = s.gpu.latenessSummary();
  metric('kvemu_step_lateness_p50_ms', 'gauge', 'Median lateness of step ends (model ms).', late.p50);
  metric('kvemu_step_lateness_p99_ms', 'gauge', '99th percentile lateness of step ends (model ms).', late.p99);
  metric('kvemu_step_lateness_max_ms', 'gauge', 'Largest lateness of a step end (model ms).', late.max);
  metric('kvemu_gpu_busy_ms', 'counter', 'Model ms the engine\'s GPU ran a forward pass.',
    s.gpu.busyMs, 'kvemu_gpu_busy_ms_total');
  return lines.join('\n') + '\n';
}

module.exports = { renderMetrics };
