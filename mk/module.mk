# Builds the dynamic module against Debian's nginx-dev tree with Debian's
# own configure flags (nginx-notes.md 4.2), so that load_module works with
# /usr/sbin/nginx.  Configure runs again only when config or the source
# list changes; `make module` otherwise only compiles.

NGX_SRC      := /usr/share/nginx/src
MODULE_DEPS  := config src/sources ngx_http_kvroute_module.c $(KVR_ALL_SRCS) \
                $(wildcard src/*/*.h)

module: $(MODULE_SO)

$(BUILD)/Makefile: config src/sources
	@mkdir -p $(BUILD)
	export SRC=$(TOP) BUILD=$(BUILD); cd $(NGX_SRC) && \
	bash -c '. ./conf_flags && ./configure \
	  --with-cc-opt="$$(dpkg-buildflags --get CFLAGS) -fPIC $$(dpkg-buildflags --get CPPFLAGS) $(KVR_EXTRA_CFLAGS)" \
	  --with-ld-opt="$$(dpkg-buildflags --get LDFLAGS) -fPIC $(KVR_EXTRA_LDFLAGS)" \
	  "$${NGX_CONF_FLAGS[@]}" \
	  --add-dynamic-module="$$SRC" --builddir="$$BUILD"' > $(BUILD)/configure.log 2>&1 \
	  || { tail -30 $(BUILD)/configure.log; exit 1; }

$(MODULE_SO): $(BUILD)/Makefile $(MODULE_DEPS)
	$(MAKE) -f $(BUILD)/Makefile -C $(NGX_SRC) modules
	printf 'load_module %s;\nevents{}\n' $(MODULE_SO) > $(BUILD)/loadtest.conf
	$(NGINX) -g "error_log /dev/null; pid /dev/null;" -t -q \
	    -c $(BUILD)/loadtest.conf

# `make install`: the module where Debian keeps nginx's modules, and the
# kvroute-tokenize CLI next to it and on PATH
MODULES_DIR  ?= /usr/lib/nginx/modules
BIN_DIR      ?= /usr/local/bin

install: all
	install -d $(DESTDIR)$(MODULES_DIR) $(DESTDIR)$(BIN_DIR)
	install -m 644 $(MODULE_SO) $(DESTDIR)$(MODULES_DIR)/
	install -m 755 $(BUILD)/kvroute-tokenize $(DESTDIR)$(MODULES_DIR)/
	ln -sf $(MODULES_DIR)/kvroute-tokenize $(DESTDIR)$(BIN_DIR)/kvroute-tokenize

.PHONY: install
