#!/bin/sh
# Install the Debian packages retryd needs, but only when pkg-config cannot
# already find them. Safe to run repeatedly; make demo / make check call it.
set -eu

PKGS="libuv1-dev libjansson-dev libpcre2-dev libcurl4-openssl-dev libhiredis-dev check pkg-config python3 redis-server"
MODULES="libuv jansson libpcre2-8 libcurl hiredis check"
# Programs the build or the tests run (redis-server: the Redis tests start their own).
PROGRAMS="pkg-config python3 redis-server"

missing=0
for p in $PROGRAMS; do
	command -v "$p" >/dev/null 2>&1 || { missing=1; break; }
done
if [ "$missing" -eq 0 ]; then
	for m in $MODULES; do
		pkg-config --exists "$m" || { missing=1; break; }
	done
fi
[ "$missing" -eq 0 ] && exit 0

echo "deps.sh: installing $PKGS" >&2
if [ "$(id -u)" -eq 0 ]; then
	SUDO=""
elif command -v sudo >/dev/null 2>&1; then
	SUDO="sudo"
else
	echo "deps.sh: need root or sudo to install: $PKGS" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $PKGS >&2

for m in $MODULES; do
	pkg-config --exists "$m" || { echo "deps.sh: $m still not found by pkg-config" >&2; exit 1; }
done
for p in $PROGRAMS; do
	command -v "$p" >/dev/null 2>&1 || { echo "deps.sh: $p still not found in PATH" >&2; exit 1; }
done
