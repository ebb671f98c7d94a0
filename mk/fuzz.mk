# `make fuzz`: every libFuzzer target in t/unit/fuzz_*.c, built with clang
# (address and undefined-behaviour sanitizers) and run FUZZ_SECONDS each on
# a corpus kept in build/fuzz/<target>, seeded from t/unit/corpus/<name>
# (fuzz_events from t/unit/corpus/events, ...), else t/unit/corpus/request.

FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_SRCS    := $(wildcard t/unit/fuzz_*.c)
FUZZ_BINS    := $(patsubst t/unit/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))

$(BUILD)/fuzz/%: t/unit/%.c $(KVR_LIB_SRCS) $(KVR_LIB_HDRS)
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) -g -O1 -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=undefined $(KVR_INCS) -o $@ $< \
	    $(KVR_LIB_SRCS) $(KVR_LIBS)

fuzz: $(FUZZ_BINS)
	@for bin in $(FUZZ_BINS); do \
	    name=$$(basename $$bin); \
	    seeds=t/unit/corpus/$${name#fuzz_}; \
	    [ -d $$seeds ] || seeds=t/unit/corpus/request; \
	    mkdir -p $(BUILD)/fuzz/$$name.corpus; \
	    echo "== $$name, $(FUZZ_SECONDS) s, seeds $$seeds"; \
	    $$bin -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        $(BUILD)/fuzz/$$name.corpus $$seeds \
	        2>&1 | grep -E 'stat::number_of_executed_units|ERROR|SUMMARY' ; \
	    test $${PIPESTATUS[0]} -eq 0 || exit 1; \
	done

.PHONY: fuzz
