# Builds the dynamic module against an nginx source tree, NGINX_SRC:
#
# - Debian's nginx-dev tree (/usr/share/nginx/src, the default), with
#   Debian's own configure flags (nginx-notes.md 4.2), so that load_module
#   works with /usr/sbin/nginx;
# - any other tree (an upstream release tarball or git checkout, OpenResty's
#   bundle/nginx-x.y.z) with --with-compat and nginx's defaults: the module
#   then loads into any nginx of that version built with --with-compat.
#
# build/ remembers the tree it was configured for (build/nginx-src), so
# `make module NGINX_SRC=...` once, then `make test NGINX_BIN=... ECHO_SO=...`
# runs the suite against that nginx.  Configure runs again for a new tree,
# config or source list; `make module` otherwise only compiles.

NGX_DEBIAN_SRC := /usr/share/nginx/src
NGX_SRC_STAMP  := $(BUILD)/nginx-src
NGINX_SRC      ?= $(or $(file < $(NGX_SRC_STAMP)),$(NGX_DEBIAN_SRC))
NGX_SRC        := $(abspath $(NGINX_SRC))
NGX_VERSION     = $(shell sed -n 's/^\#define NGINX_VERSION *"\(.*\)"/\1/p' \
                      $(NGX_SRC)/src/core/nginx.h)
MODULE_DEPS  := config src/sources ngx_http_kvroute_module.c $(KVR_ALL_SRCS) \
                $(wildcard src/*/*.h)

# a new tree means a new configure
ifneq ($(NGX_SRC),$(file < $(NGX_SRC_STAMP)))
$(shell mkdir -p $(BUILD) && printf '%s' '$(NGX_SRC)' > $(NGX_SRC_STAMP))
endif

module: $(MODULE_SO)

# $(call ngx_configure,BUILDDIR,CC_OPT,LD_OPT): configure NGX_SRC with the
# module added, objects in BUILDDIR.  A git checkout has auto/configure,
# a release tarball ./configure.
define ngx_configure
@mkdir -p $(1)
export SRC=$(TOP) BUILD=$(1); cd $(NGX_SRC) && \
if [ -f conf_flags ]; then bash -c '. ./conf_flags && ./configure \
  --with-cc-opt="$$(dpkg-buildflags --get CFLAGS) -fPIC $$(dpkg-buildflags --get CPPFLAGS) $(2)" \
  --with-ld-opt="$$(dpkg-buildflags --get LDFLAGS) -fPIC $(3)" \
  "$${NGX_CONF_FLAGS[@]}" \
  --add-dynamic-module="$$SRC" --builddir="$$BUILD"'; \
else conf=./configure; test -x $$conf || conf=auto/configure; \
  $$conf --with-compat --with-cc-opt="-fPIC $(2)" --with-ld-opt="-fPIC $(3)" \
  --add-dynamic-module="$$SRC" --builddir="$$BUILD"; fi \
  > $(1)/configure.log 2>&1 || { tail -30 $(1)/configure.log; exit 1; }
endef

# $(call ngx_load_test,NGINX,SO,DIR): nginx -t loads the module, when that
# nginx is the version the module was built for
define ngx_load_test
printf 'load_module %s;\nevents{}\n' $(2) > $(3)/loadtest.conf
@if $(1) -v 2>&1 | grep -q '/$(NGX_VERSION)\b'; then \
    $(1) -g "error_log /dev/null; pid /dev/null;" -t -q \
        -c $(3)/loadtest.conf; \
else echo "built for nginx $(NGX_VERSION) ($(NGX_SRC)); $(1) is" \
    "another version: not load-tested (NGINX_BIN=...)"; fi
endef

$(BUILD)/Makefile: config src/sources $(NGX_SRC_STAMP)
	$(call ngx_configure,$(BUILD),$(KVR_EXTRA_CFLAGS),$(KVR_EXTRA_LDFLAGS))

$(MODULE_SO): $(BUILD)/Makefile $(MODULE_DEPS)
	$(MAKE) -f $(BUILD)/Makefile -C $(NGX_SRC) modules
	$(call ngx_load_test,$(NGINX),$(MODULE_SO),$(BUILD))

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
