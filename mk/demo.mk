# `make demo`: kvroute in front of local engine emulators (tools/demo.sh).

demo: deps module bench-deps
	bash tools/demo.sh
