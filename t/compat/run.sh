#!/usr/bin/env bash
# The module compiles (nginx's -Werror, --with-compat, out of tree) against
# the oldest and the newest nginx a fresh Debian 12 machine can get: the
# upstream source (the .orig tarball) of Debian's nginx in bookworm, and the
# newest of COMPAT_NEWEST (first that downloads), read through a private apt
# configuration in WORKDIR (the system's sources stay as they are;
# checksums from the signed Sources indexes).  Any nginx source tree given
# as an argument is compiled against too.  Each build is only compiled:
# `make module NGINX_SRC=... && make test NGINX_BIN=...` runs the suite.
#
# Usage: t/compat/run.sh WORKDIR [NGINX_SOURCE_TREE...]
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mkdir -p "$1" && cd "$1" && pwd); shift
oldest=${COMPAT_OLDEST:-bookworm}
newest=${COMPAT_NEWEST:-sid trixie bookworm-backports}

apt_dir=$work/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
for suite in $oldest $newest; do
    echo "deb-src http://deb.debian.org/debian $suite main"
done > "$apt_dir/sources.list"
apt=(-o Dir::Etc::SourceList="$apt_dir/sources.list"
     -o Dir::Etc::SourceParts=/dev/null
     -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache")
apt-get "${apt[@]}" update -qq

# orig_tree SUITE: the upstream tree of that suite's nginx, or nothing
orig_tree() {
    local line uri name sum dir
    line=$(apt-get "${apt[@]}" source --print-uris -qq "nginx/$1" \
           2>/dev/null | grep "\.orig\.tar\.gz' ") || return 0
    read -r uri name _ sum <<< "$line"
    uri=${uri//\'/} sum=${sum#SHA256:}
    dir=$work/src/${name%.orig.tar.gz}
    if [ ! -f "$dir/src/core/nginx.h" ]; then
        mkdir -p "$work/src"
        curl -fsS -o "$work/src/$name" "$uri" || return 0
        echo "$sum  $work/src/$name" | sha256sum -c --quiet - || return 1
        mkdir -p "$dir"
        tar -xzf "$work/src/$name" -C "$dir" --strip-components=1
    fi
    echo "$dir"
}

trees=()
tree=$(orig_tree "$oldest")
[ -n "$tree" ] || { echo "no nginx source for $oldest" >&2; exit 1; }
trees+=("$tree")
for suite in $newest; do
    tree=$(orig_tree "$suite")
    if [ -n "$tree" ]; then trees+=("$tree"); break; fi
    echo "# nginx source of $suite: not available here"
done
trees+=("$@")

failed=0
for tree in "${trees[@]}"; do
    tree=$(cd "$tree" && pwd)
    version=$(sed -n 's/^#define NGINX_VERSION *"\(.*\)"/\1/p' \
              "$tree/src/core/nginx.h")
    build=$work/build-$version
    conf=./configure
    [ -x "$tree/$conf" ] || conf=auto/configure
    mkdir -p "$build"
    if (cd "$tree" && $conf --with-compat --with-cc-opt=-fPIC \
            --with-ld-opt=-fPIC --add-dynamic-module="$top" \
            --builddir="$build" > "$build/configure.log" 2>&1 \
        && make -f "$build/Makefile" modules > "$build/make.log" 2>&1); then
        echo "ok - nginx $version ($tree): module compiles"
    else
        failed=1
        echo "not ok - nginx $version ($tree): see $build/*.log"
        tail -20 "$build/make.log" 2>/dev/null || tail -20 "$build/configure.log"
    fi
done
exit $failed
