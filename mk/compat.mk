# `make test-compat`: the module compiles against the oldest and the newest
# nginx sources a fresh Debian 12 machine can get from Debian's archive
# (t/compat/run.sh), and against every tree in COMPAT_SRCS (upstream
# checkouts, OpenResty's bundle/nginx-x.y.z).  Needs the network; .ci/run
# runs it after `make test`.

COMPAT_SRCS ?=

test-compat:
	t/compat/run.sh $(BUILD)/compat $(COMPAT_SRCS)

.PHONY: test-compat
