# kvroute on Debian 12: builds the module against Debian's nginx and runs the
# very script CI runs (.ci/run -> make test).
#
#   docker build -t kvroute .
#   docker run --rm kvroute                 # the whole test suite
#   docker run --rm -p 8400:8400 kvroute make demo

FROM debian:bookworm

ENV DEBIAN_FRONTEND=noninteractive

RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends make ca-certificates \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src/kvroute
COPY . .

# installs the packages `make test` needs (apt-get, npm) and builds
RUN make deps && make all && make bench-deps

CMD ["bash", ".ci/run"]
