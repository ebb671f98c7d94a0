# kvroute on Debian 12: builds the module against Debian's nginx and runs the
# very script CI runs (.ci/run -> make test, make test-compat).
#
#   docker build -t kvroute .               # or podman (README, Container)
#   docker run --rm kvroute                 # the whole test suite
#   docker run --rm -p 8400:8400 kvroute make demo
#
# Behind a TLS-intercepting proxy npm needs the proxy's CA: mount a bundle
# holding it and name it, at build and at run time, e.g.
#   podman build -v /etc/ssl/certs/ca-certificates.crt:/etc/extra-ca.crt:ro \
#       --build-arg NODE_EXTRA_CA_CERTS=/etc/extra-ca.crt -t kvroute .

FROM debian:bookworm

ENV DEBIAN_FRONTEND=noninteractive
ARG NODE_EXTRA_CA_CERTS

RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends make ca-certificates \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src/kvroute

# the packages `make test` needs (`make deps` reads only the makefiles), in
# a layer of their own that source changes keep
COPY Makefile ./
COPY mk/ mk/
COPY src/sources src/
RUN make deps

COPY . .

# builds, and installs the npm packages the tests use
RUN make all && make bench-deps

CMD ["bash", ".ci/run"]
