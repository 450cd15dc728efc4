#!/bin/sh
# Install oh-my-pi (npm package @oh-my-pi/pi-coding-agent) and the bun that
# runs it (npm package @oven/bun-linux-<arch>) into build/omp, for
# `make interop` to drive retryd with omp's own RpcClient.
#
#   scripts/omp-install.sh           install (or confirm) the pinned versions
#   OMP_PREFIX=/tmp/omp scripts/omp-install.sh
#
# Idempotent: when the prefix already holds the pinned versions it only says
# so. Prints the path of the bun binary last.
#
# Exit status: 0 installed / already there; 3 the npm registry cannot be
# reached (callers skip); 4 node or npm is missing, or no bun package exists
# for this machine, or its bun does not start; 1 any other failure.
#
# Pinned: omp 18.2.3 is what reference/omp-traces were taken with (18.3.4
# does not install: one of its dependencies is missing from the registry);
# bun 1.4.5 runs it.
set -eu

OMP_PACKAGE=@oh-my-pi/pi-coding-agent
OMP_VERSION=${OMP_VERSION:-18.2.3}
BUN_VERSION=${BUN_VERSION:-1.4.5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${OMP_PREFIX:-$ROOT/build/omp}

say() { printf 'omp-install: %s\n' "$*" >&2; }

case $(uname -m) in
x86_64|amd64) BUN_PACKAGE=@oven/bun-linux-x64 ;;
aarch64|arm64) BUN_PACKAGE=@oven/bun-linux-aarch64 ;;
*) say "no bun package for $(uname -m); omp not installed"; exit 4 ;;
esac
[ "$(uname -s)" = Linux ] || { say "the bun package is for Linux; omp not installed"; exit 4; }

OMP_JSON=$PREFIX/node_modules/$OMP_PACKAGE/package.json
BUN_JSON=$PREFIX/node_modules/$BUN_PACKAGE/package.json
BUN=$PREFIX/node_modules/$BUN_PACKAGE/bin/bun

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    say "node and npm are needed to fetch omp and bun (Debian: apt-get install nodejs npm)"
    exit 4
fi

version_of() {
    [ -f "$1" ] || return 1
    node -p "require(process.argv[1]).version" "$1" 2>/dev/null
}

installed() {
    [ "$(version_of "$OMP_JSON" || true)" = "$OMP_VERSION" ] &&
        [ "$(version_of "$BUN_JSON" || true)" = "$BUN_VERSION" ] && [ -x "$BUN" ]
}

# bun-linux-x64 needs a CPU with AVX2 (bun ships a "baseline" build for the
# others); a bun that does not start is "cannot run here", not a failure.
runnable() {
    "$BUN" --version >/dev/null 2>&1 && return 0
    say "$BUN does not run on this machine; omp not usable"
    exit 4
}

if installed; then
    runnable
    say "omp $OMP_VERSION and bun $BUN_VERSION already installed in $PREFIX"
    echo "$BUN"
    exit 0
fi

# A short, bounded probe so an offline machine gets a clear answer instead of
# npm's minutes of retries.
REGISTRY=$(npm config get registry 2>/dev/null || echo https://registry.npmjs.org/)
if ! timeout 30 npm view "$OMP_PACKAGE@$OMP_VERSION" version \
        --fetch-retries=0 --fetch-timeout=15000 >/dev/null 2>&1; then
    say "cannot reach the npm registry ($REGISTRY) or it has no $OMP_PACKAGE@$OMP_VERSION;"
    say "omp not installed (offline?)."
    exit 3
fi

say "installing $BUN_PACKAGE@$BUN_VERSION and $OMP_PACKAGE@$OMP_VERSION into $PREFIX"
mkdir -p "$PREFIX"
# A private package.json keeps npm from walking up into the project.
if [ ! -f "$PREFIX/package.json" ]; then
    printf '{ "name": "retryd-omp-scratch", "private": true }\n' > "$PREFIX/package.json"
fi
rc=0
timeout 600 npm install --prefix "$PREFIX" --save-exact --no-audit --no-fund \
    --loglevel=error "$BUN_PACKAGE@$BUN_VERSION" "$OMP_PACKAGE@$OMP_VERSION" >&2 || rc=$?
if [ "$rc" -ne 0 ]; then
    # Lost the registry half-way? Then it is "unreachable", not a broken install.
    if ! timeout 30 npm view "$OMP_PACKAGE@$OMP_VERSION" version \
            --fetch-retries=0 --fetch-timeout=15000 >/dev/null 2>&1; then
        say "the npm registry stopped answering during the install; omp not installed"
        exit 3
    fi
    say "npm install failed (status $rc)"
    exit 1
fi

if installed; then
    runnable
    say "omp $OMP_VERSION and bun $BUN_VERSION installed: $BUN"
    echo "$BUN"
    exit 0
fi
say "npm install finished but $BUN or $OMP_JSON is missing or of another version"
exit 1
