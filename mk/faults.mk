# `make faults`: fault injection under load (bench/faults/run.sh): worker
# and events helper killed with SIGKILL, a server stopped and started,
# reload with a changed upstream, the index zone filled, a malformed-event
# flood; PASS/FAIL per scenario. About 3 minutes; not part of `make test`.
# FAULTS_SECONDS: load per scenario; FAULTS: scenarios to run (default all).
FAULTS_SECONDS ?= 20
FAULTS         ?=

faults: deps module bench-deps
	FAULTS_SECONDS=$(FAULTS_SECONDS) bench/faults/run.sh $(FAULTS)

.PHONY: faults
