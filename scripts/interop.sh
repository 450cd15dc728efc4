#!/bin/sh
# make interop: drive retryd with JavaScript clients, each through the
# launcher of the retryd npm package (clients/js/bin/retryd-rpc.mjs):
#
#   1. clients/js's own RetrydClient and the launcher (node only);
#   2. pi's RpcClient: pi 1.6 (npm @earendil-works/pi-coding-agent, into
#      build/pi16 with its Node 22) and the pinned 0.73.1 (npm
#      @mariozechner/pi-coding-agent, into build/pi), by pi-install.sh;
#   3. oh-my-pi's RpcClient: the newest runnable 18.3.x (into
#      build/omp-<version>) and the pinned 18.2.3 (into build/omp), with the
#      bun that runs them, by omp-install.sh.
#
#   RETRYD=build/retryd scripts/interop.sh
#
# A part that cannot run here (node/npm missing, the npm registry
# unreachable) says "interop: SKIPPED: ..." and counts as passed; any failing
# test makes the exit status 1. Every run is bounded by `timeout`.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRYD=${RETRYD:-$ROOT/build/retryd}
# The client versions: the newest, and the older pins kept as regressions (a
# user may run either). Each is printed with its run.
PI_NEW=${PI_NEW:-1.6.0}
PI_OLD=${PI_OLD:-0.73.1}
OMP_NEW=${OMP_NEW:-18.3.4}
OMP_OLD=${OMP_OLD:-18.2.3}
PI_PREFIX=${PI_PREFIX:-$ROOT/build/pi}
PI16_PREFIX=${PI16_PREFIX:-$ROOT/build/pi16}
OMP_PREFIX=${OMP_PREFIX:-$ROOT/build/omp}
OMP_NEW_PREFIX=${OMP_NEW_PREFIX:-$ROOT/build/omp-$OMP_NEW}
export RETRYD
echo "interop: clients: pi $PI_NEW and $PI_OLD, oh-my-pi $OMP_NEW and $OMP_OLD (PI_NEW, PI_OLD, OMP_NEW, OMP_OLD)"

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

# 2. pi's RpcClient: pi 1.6 (npm @earendil-works/pi-coding-agent, the name pi
# is published under since 1.0, on the Node >= 22.19 it needs, installed
# beside it from npm) and the pinned 0.73.1 (@mariozechner/pi-coding-agent,
# on the machine's node) as the regression. pi-install.sh prints pi's
# package directory and the node that runs it.
run_pi() { # version prefix
    out=$(PI_VERSION="$1" PI_PREFIX="$2" PI16_PREFIX="$2" "$ROOT/scripts/pi-install.sh") && rc=0 || rc=$?
    case $rc in
    0) pkg=$(echo "$out" | sed -n 1p); node=$(echo "$out" | sed -n 2p)
       echo "interop: pi $1's RpcClient ($pkg, node $("$node" --version)) against $RETRYD"
       PI_PKG_DIR="$pkg" timeout 180 "$node" --test "$ROOT/tests/interop/rpc_client.test.mjs" ||
           fail "pi $1's RpcClient" ;;
    3) echo "interop: SKIPPED: the npm registry cannot be reached, so pi $1's RpcClient could not be installed" ;;
    4) echo "interop: SKIPPED: node and npm are needed to run pi $1's RpcClient" ;;
    *) fail "installing pi $1 (status $rc)" ;;
    esac
}
run_pi "$PI_NEW" "$PI16_PREFIX"
run_pi "$PI_OLD" "$PI_PREFIX"

# 3. oh-my-pi's RpcClient, on the bun installed with it: the newest release
# whose RpcClient runs (omp-install.sh installs it from its npm tarball when
# its pinned dependencies are not all published), and the pinned 18.2.3.
run_omp() { # version prefix
    BUN=$(OMP_VERSION="$1" OMP_PREFIX="$2" "$ROOT/scripts/omp-install.sh") && rc=0 || rc=$?
    case $rc in
    0) echo "interop: oh-my-pi $1's RpcClient (bun $("$BUN" --version)) against $RETRYD"
       # Each test has its own 30 s limit; this bounds the whole file.
       (cd "$ROOT" && OMP_PREFIX="$2" timeout 240 "$BUN" test --timeout 30000 \
           ./tests/interop/omp_rpc_client.test.ts) || fail "oh-my-pi $1's RpcClient" ;;
    3) echo "interop: SKIPPED: the npm registry cannot be reached, so oh-my-pi $1's RpcClient could not be installed" ;;
    4) echo "interop: SKIPPED: oh-my-pi needs node and npm (to fetch it) and a bun that runs on this machine" ;;
    *) fail "installing oh-my-pi $1 (status $rc)" ;;
    esac
}
run_omp "$OMP_NEW" "$OMP_NEW_PREFIX"
run_omp "$OMP_OLD" "$OMP_PREFIX"

if [ -n "$failed" ]; then
    echo "interop: failed:$failed"
    exit 1
fi
echo "interop: ok"
