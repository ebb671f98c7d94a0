# The policy simulator (bench/sim) runs the module's own policy code: the
# route room's policy and ttft_decode=auto's learner, built to WebAssembly
# with Debian's clang 14, lld and wasi-libc (mk/deps.mk), behind the flat
# calls of bench/sim/c; the same
# sources built natively give build/policy-cli, which bench/test/policy_c
# feeds the same cases to show both pick alike.

WASM_CC      ?= clang-14
WASM_SYSROOT ?= /usr
WASM_SRCS    := $(TOP)/src/route/kvr_policy.c $(TOP)/bench/sim/c/kvr_policy_flat.c \
                $(TOP)/src/route/kvr_inflight_cost.c \
                $(TOP)/bench/sim/c/kvr_inflight_flat.c
WASM_HDRS    := $(TOP)/src/route/kvr_policy.h $(TOP)/bench/sim/c/kvr_policy_flat.h \
                $(TOP)/src/route/kvr_inflight_cost.h \
                $(TOP)/bench/sim/c/kvr_inflight_flat.h
WASM_OUT     := $(BUILD)/kvr_policy.wasm
POLICY_CLI   := $(BUILD)/policy-cli

$(WASM_OUT): $(WASM_SRCS) $(WASM_HDRS)
	@mkdir -p $(BUILD)
	$(WASM_CC) --target=wasm32-wasi -O2 -Wall -Wextra -Werror \
	    -isystem /usr/include/wasm32-wasi -I$(TOP)/src/route \
	    -L/usr/lib/wasm32-wasi -nostartfiles -Wl,--no-entry \
	    -Wl,--export=kvr_flat_pick -Wl,--export=kvr_flat_buffer \
	    -Wl,--export=kvr_flat_queued \
	    -Wl,--export=kvr_flat_learn_init -Wl,--export=kvr_flat_learn_ended \
	    -Wl,--export=kvr_flat_learn_learned -Wl,--export=kvr_flat_learn_fits \
	    -o $@ $(WASM_SRCS) -lm

$(POLICY_CLI): $(WASM_SRCS) $(WASM_HDRS) $(TOP)/bench/sim/c/policy_cli.c
	@mkdir -p $(BUILD)
	$(CC) $(KVR_CFLAGS) -o $@ $(WASM_SRCS) $(TOP)/bench/sim/c/policy_cli.c -lm

policy-wasm: $(WASM_OUT) $(POLICY_CLI)

# alone; test-bench (mk/bench.mk) runs it with the other bench tests
test-policy-wasm: policy-wasm bench-deps
	cd $(BENCH_DIR) && node --test test/policy_c.test.js

.PHONY: policy-wasm test-policy-wasm
