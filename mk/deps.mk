# Installs the Debian packages the build and the tests need, only when one
# is missing (so repeated runs cost nothing).

DEB_PKGS := nginx nginx-dev libnginx-mod-http-echo libzmq3-dev \
    libjansson-dev libxxhash-dev libmsgpack-dev libpcre2-dev \
    libutf8proc-dev build-essential pkg-config curl perl \
    libtest-base-perl libtext-diff-perl libtest-longstring-perl \
    liblist-moreutils-perl libhttp-message-perl liburi-perl \
    libipc-run-perl wrk gnuplot-nox python3-jinja2 clang gdb debhelper \
    clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32

# node and npm may come from elsewhere than Debian (the machine image has
# them); Debian's are installed only when the commands are missing
NODE_PKGS := nodejs npm

deps:
	@missing=$$(for p in $(DEB_PKGS); do \
	    dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
	    | grep -q 'install ok installed' || echo $$p; done; \
	    command -v node >/dev/null && command -v npm >/dev/null \
	    || echo $(NODE_PKGS)); \
	if [ -n "$$missing" ]; then \
	    echo "installing:" $$missing; \
	    if [ "$$(id -u)" != 0 ]; then \
	        echo "missing packages; run as root or install them" >&2; \
	        exit 1; fi; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get update -qq && \
	    apt-get install -y -qq --no-install-recommends $$missing; \
	fi
