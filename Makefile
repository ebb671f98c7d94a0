# kvroute: top-level build.  `make test` and `make demo` work on a fresh
# Debian 12 machine as root: they install what is missing first.
#
# Pieces of the build live in mk/*.mk, one concern per file; each may add
# its test target to TEST_TARGETS.

SHELL        := /bin/bash
TOP          := $(CURDIR)
BUILD        := $(TOP)/build
# the nginx the tests run (mk/module.mk builds for it: NGINX_SRC)
NGINX_BIN    ?= /usr/sbin/nginx
NGINX        ?= $(NGINX_BIN)
MODULE_SO    := $(BUILD)/ngx_http_kvroute_module.so

CC           ?= cc
KVR_LIBS     := -ljansson -lxxhash -lm -lpcre2-8 -lutf8proc

TEST_TARGETS :=

# KVR_INCS: mk/sources.mk
KVR_CFLAGS    = -O2 -g -Wall -Wextra -Werror -std=gnu99 $(KVR_INCS)

.PHONY: all deps module tools test demo bench clean deb

all: module tools

include mk/sources.mk
include mk/deps.mk
include mk/module.mk
include mk/unit.mk
include mk/nginx-tests.mk
include mk/bench.mk
include mk/demo.mk
include mk/fuzz.mk
include mk/tokenizer.mk
include mk/jinja.mk
include mk/asan.mk
include mk/faults.mk
include mk/deb.mk
include mk/compat.mk
include mk/wasm.mk

# the whole suite again against the module built with ASan + UBSan
TEST_TARGETS += test-asan

test: deps all
	$(MAKE) --no-print-directory $(TEST_TARGETS)

clean:
	rm -rf $(BUILD) build-asan t/servroot*
