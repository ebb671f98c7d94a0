# The bench: the Node.js engine emulator and load generator under bench/.
# bench-deps installs the pinned npm packages (bench/package-lock.json);
# test-bench runs bench/test/*.test.js with node's built-in test runner.

BENCH_DIR := $(TOP)/bench

bench-deps: $(BENCH_DIR)/node_modules/.package-lock.json

$(BENCH_DIR)/node_modules/.package-lock.json: $(BENCH_DIR)/package-lock.json
	cd $(BENCH_DIR) && npm ci --no-audit --no-fund --loglevel=error

test-bench: bench-deps
	cd $(BENCH_DIR) && node --test --test-concurrency=1 test/

TEST_TARGETS += test-bench

.PHONY: bench-deps test-bench
