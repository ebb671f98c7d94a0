# The Test::Nginx-format suite in t/*.t, run by prove with kvroute's own
# runner (t/lib), against Debian's nginx and the freshly built module.

test-nginx: $(MODULE_SO)
	TEST_NGINX_BINARY=$(NGINX) TEST_NGINX_KVROUTE_SO=$(MODULE_SO) \
	    prove -I t/lib -r t/*.t

TEST_TARGETS += test-nginx
