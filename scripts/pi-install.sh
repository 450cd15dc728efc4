#!/bin/sh
# Install the real pi (npm package @mariozechner/pi-coding-agent) into build/pi,
# for `make conformance` and `make bench` to compare retryd against.
#
#   scripts/pi-install.sh            install (or confirm) the pinned version
#   PI_VERSION=0.73.1 scripts/pi-install.sh
#
# Idempotent: when build/pi already holds the pinned version it only says so.
# Prints the path of the pi entry point (build/pi/node_modules/.bin/pi) last.
#
# Exit status: 0 installed / already there; 3 the npm registry cannot be
# reached (callers treat this as "pi not available, skip"); 4 node or npm is
# missing or too old; 1 any other failure.
#
# pi 0.73.1 is pinned: the traces in the design notes (reference/pi-traces)
# were taken with 0.73, and it is the latest release at the time of writing.
set -eu

PI_PACKAGE=@mariozechner/pi-coding-agent
PI_VERSION=${PI_VERSION:-0.73.1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${PI_PREFIX:-$ROOT/build/pi}
PKG_JSON=$PREFIX/node_modules/@mariozechner/pi-coding-agent/package.json
BIN=$PREFIX/node_modules/.bin/pi

say() { printf 'pi-install: %s\n' "$*" >&2; }

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    say "node and npm are needed (Debian: apt-get install nodejs npm); pi not installed"
    exit 4
fi
NODE_MAJOR=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$NODE_MAJOR" -lt 20 ]; then
    say "pi $PI_VERSION needs node >= 20.6, found $(node --version); pi not installed"
    exit 4
fi

installed_version() {
    [ -f "$PKG_JSON" ] || return 1
    node -p "require(process.argv[1]).version" "$PKG_JSON" 2>/dev/null
}

if v=$(installed_version) && [ "$v" = "$PI_VERSION" ] && [ -x "$BIN" ]; then
    say "pi $v already installed in $PREFIX"
    echo "$BIN"
    exit 0
fi

# Can the registry be reached at all? A short, bounded probe so an offline
# machine gets a clear answer instead of npm's minutes of retries.
REGISTRY=$(npm config get registry 2>/dev/null || echo https://registry.npmjs.org/)
if ! timeout 30 npm view "$PI_PACKAGE@$PI_VERSION" version \
        --fetch-retries=0 --fetch-timeout=15000 >/dev/null 2>&1; then
    say "cannot reach the npm registry ($REGISTRY) or it has no $PI_PACKAGE@$PI_VERSION;"
    say "pi not installed (offline?). Comparisons against pi will be skipped."
    exit 3
fi

say "installing $PI_PACKAGE@$PI_VERSION into $PREFIX (npm install --prefix)"
mkdir -p "$PREFIX"
# A private package.json keeps npm from walking up into the project.
if [ ! -f "$PREFIX/package.json" ]; then
    printf '{ "name": "retryd-pi-scratch", "private": true }\n' > "$PREFIX/package.json"
fi
rc=0
timeout 600 npm install --prefix "$PREFIX" --save-exact --no-audit --no-fund \
    --loglevel=error "$PI_PACKAGE@$PI_VERSION" >&2 || rc=$?
if [ "$rc" -ne 0 ]; then
    # Lost the registry half-way? Then it is "unreachable", not a broken install.
    if ! timeout 30 npm view "$PI_PACKAGE@$PI_VERSION" version >/dev/null 2>&1; then
        say "the npm registry stopped answering during the install; pi not installed"
        exit 3
    fi
    say "npm install failed (status $rc)"
    exit 1
fi

if v=$(installed_version) && [ "$v" = "$PI_VERSION" ] && [ -x "$BIN" ]; then
    say "pi $v installed: $BIN"
    echo "$BIN"
    exit 0
fi
say "npm install finished but $BIN is missing"
exit 1
