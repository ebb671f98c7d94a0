# Unit tests of the plain-C parts: each t/unit/test_*.c is linked with the
# src/kvr_*.c files and prints TAP; prove runs them.

UNIT_SRCS    := $(wildcard t/unit/test_*.c)
UNIT_BINS    := $(patsubst t/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRCS))
KVR_LIB_SRCS := $(wildcard src/kvr_*.c)
KVR_LIB_HDRS := $(wildcard src/kvr_*.h)

$(BUILD)/unit/%: t/unit/%.c $(KVR_LIB_SRCS) $(KVR_LIB_HDRS) t/unit/tap.h
	@mkdir -p $(BUILD)/unit
	$(CC) $(KVR_CFLAGS) -It/unit -o $@ $< $(KVR_LIB_SRCS) $(KVR_LIBS)

unit: $(UNIT_BINS)

test-unit: $(UNIT_BINS)
	prove --exec "" $(UNIT_BINS)

TEST_TARGETS += test-unit
