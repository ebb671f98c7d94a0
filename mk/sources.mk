# The one list of sources (src/sources), as the makefiles use it: the
# plain-C core (every room but ngx/) is built into build/libkvr.a, which
# the unit tests, the CLIs and the micro-benchmarks link; each room is an
# include directory, as nginx's own src/ rooms are.

KVR_ALL_SRCS := $(addprefix src/,$(shell grep -v '^\#' $(TOP)/src/sources))
KVR_NGX_SRCS := $(filter src/ngx/%,$(KVR_ALL_SRCS))
KVR_LIB_SRCS := $(filter-out src/ngx/%,$(KVR_ALL_SRCS))
KVR_LIB_HDRS := $(filter-out src/ngx/%,$(wildcard src/*/*.h))
KVR_INCS     := $(addprefix -I$(TOP)/,$(patsubst %/,%,$(sort $(dir $(KVR_ALL_SRCS)))))
KVR_LIB_OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(KVR_LIB_SRCS))
KVR_LIB_A    := $(BUILD)/libkvr.a

TOK_SRCS     := $(filter src/tokenizer/%,$(KVR_LIB_SRCS))
TOK_HDRS     := $(filter src/tokenizer/%,$(KVR_LIB_HDRS))

$(BUILD)/obj/%.o: src/%.c $(KVR_LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(KVR_CFLAGS) -c -o $@ $<

$(KVR_LIB_A): $(KVR_LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

lib: $(KVR_LIB_A)

.PHONY: lib

# what lives under $(BUILD) can be asked for by its short name too:
# `make build/fuzz/fuzz_json`, `make build/micro/index_bench`
build/%: $(BUILD)/% ;
.PRECIOUS: $(BUILD)/micro/% $(BUILD)/fuzz/% $(BUILD)/unit/%
