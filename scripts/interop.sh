#!/bin/sh
# make interop: drive retryd with pi's own RpcClient (npm package
# @mariozechner/pi-coding-agent, installed into build/pi by pi-install.sh).
#
#   RETRYD=build/retryd scripts/interop.sh
#
# When the npm registry cannot be reached, or node/npm are missing, it says
# "interop: SKIPPED: ..." and exits 0; a failing test exits 1.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RETRYD=${RETRYD:-$ROOT/build/retryd}
PI_PREFIX=${PI_PREFIX:-$ROOT/build/pi}
export RETRYD PI_PREFIX

rc=0
PI_PREFIX="$PI_PREFIX" "$ROOT/scripts/pi-install.sh" >/dev/null || rc=$?
case $rc in
0) ;;
3) echo "interop: SKIPPED: the npm registry cannot be reached, so pi's RpcClient could not be installed"
   exit 0 ;;
4) echo "interop: SKIPPED: node >= 20 and npm are needed to run pi's RpcClient"
   exit 0 ;;
*) echo "interop: installing pi failed (status $rc)"
   exit 1 ;;
esac

echo "interop: pi's RpcClient against $RETRYD"
exec timeout 600 node --test "$ROOT/tests/interop/rpc_client.test.mjs"
