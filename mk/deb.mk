# `make deb`: the Debian packages libnginx-mod-http-kvroute (the module,
# mod-http-kvroute.conf, enabled through /etc/nginx/modules-enabled, the
# nginx-abi dependency) and kvroute-tokenize, from debian/ by
# dpkg-buildpackage + dh_nginx as Debian builds its own nginx modules.
# The build runs in a copy of the sources under build/deb/, so it neither
# cleans nor reconfigures build/; the .deb files land in build/deb/.
#
# `make test-deb`: t/deb/run.sh installs them with dpkg -i, checks that
# nginx loads the module through modules-enabled and routes a request
# through a kvroute upstream, then purges them and checks that nothing
# is left.  It changes the system while it runs (root; refuses when the
# packages are already installed) and restores it; /tmp/kvr-deb.lock
# keeps two runs apart.

DEB_DIR      := $(BUILD)/deb
DEB_VERSION  := $(shell dpkg-parsechangelog -l debian/changelog -S Version \
                    2>/dev/null)
DEB_ARCH     := $(shell dpkg --print-architecture 2>/dev/null)
DEB_MODULE   := $(DEB_DIR)/libnginx-mod-http-kvroute_$(DEB_VERSION)_$(DEB_ARCH).deb
DEB_CLI      := $(DEB_DIR)/kvroute-tokenize_$(DEB_VERSION)_$(DEB_ARCH).deb
DEB_INPUTS   := Makefile config ngx_http_kvroute_module.c src tools mk debian \
                README.md

deb: $(DEB_MODULE)

$(DEB_CLI): $(DEB_MODULE)

$(DEB_MODULE): $(MODULE_DEPS) $(wildcard tools/* mk/*.mk debian/* \
        debian/source/*) Makefile
	rm -rf $(DEB_DIR); mkdir -p $(DEB_DIR)/kvroute
	tar -c $(DEB_INPUTS) | tar -x -C $(DEB_DIR)/kvroute
	cd $(DEB_DIR)/kvroute && dpkg-buildpackage -b -us -uc \
	    > $(DEB_DIR)/build.log 2>&1 \
	    || { tail -30 $(DEB_DIR)/build.log; exit 1; }
	@ls $(DEB_DIR)/*.deb

test-deb: $(DEB_MODULE) $(DEB_CLI)
	flock /tmp/kvr-deb.lock t/deb/run.sh $(DEB_MODULE) $(DEB_CLI)

TEST_TARGETS += test-deb

.PHONY: deb test-deb
