#!/bin/sh
# Install oh-my-pi (npm package @oh-my-pi/pi-coding-agent) and the bun that
# runs it (npm package @oven/bun-linux-<arch>) into a prefix, for
# `make interop` to drive retryd with omp's own RpcClient.
#
#   scripts/omp-install.sh                     the pinned 18.2.3 into build/omp
#   OMP_VERSION=18.3.4 scripts/omp-install.sh  that release into build/omp-18.3.4
#   OMP_PREFIX=/tmp/omp scripts/omp-install.sh
#
# Idempotent: when the prefix already holds the wanted versions it only says
# so. Prints the path of the bun binary last.
#
# Exit status: 0 installed / already there; 3 the npm registry cannot be
# reached (callers skip); 4 node or npm is missing, or no bun package exists
# for this machine, or its bun does not start; 1 any other failure.
#
# 18.2.3 is the pinned regression (reference/omp-traces were taken with it).
# A release whose own pinned dependencies were never published (18.3.4 pins
# @oh-my-pi/pi-ai@18.3.4 and ten more siblings that the registry does not
# have) does not install with a plain `npm install`; then the coding agent's
# tarball is taken as published (npm pack) and every missing sibling is
# resolved, through npm overrides, to the nearest published release below
# the pinned one. The RpcClient uses only pi-utils at run time (the rest are
# types), and pi-utils loads pi-natives and its platform binary of its own
# release exactly (pi-natives checks a version sentinel in the binary), so
# those three take one version: the newest that all three publish. The
# install is accepted only once bun loads the RpcClient.
# bun 1.4.5 runs both (18.3 wants bun >= 1.3.14).
set -eu

OMP_PACKAGE=@oh-my-pi/pi-coding-agent
OMP_VERSION=${OMP_VERSION:-18.2.3}
BUN_VERSION=${BUN_VERSION:-1.4.5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if [ "$OMP_VERSION" = 18.2.3 ]; then
    PREFIX=${OMP_PREFIX:-$ROOT/build/omp}
else
    PREFIX=${OMP_PREFIX:-$ROOT/build/omp-$OMP_VERSION}
fi

say() { printf 'omp-install: %s\n' "$*" >&2; }

case $(uname -m) in
x86_64|amd64) BUN_PACKAGE=@oven/bun-linux-x64; NATIVES_ARCH=linux-x64 ;;
aarch64|arm64) BUN_PACKAGE=@oven/bun-linux-aarch64; NATIVES_ARCH=linux-arm64 ;;
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

# The one thing make interop needs of the install: bun loads the RpcClient.
loads() {
    "$BUN" -e "await import('$PREFIX/node_modules/$OMP_PACKAGE/src/modes/rpc/rpc-client.ts')" \
        >"$PREFIX/rpc-client-load.log" 2>&1 && return 0
    say "bun cannot load omp $OMP_VERSION's RpcClient (src/modes/rpc/rpc-client.ts):"
    tail -5 "$PREFIX/rpc-client-load.log" >&2
    exit 1
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
    loads
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
registry_lost() {
    timeout 30 npm view "$OMP_PACKAGE@$OMP_VERSION" version \
        --fetch-retries=0 --fetch-timeout=15000 >/dev/null 2>&1 && return 1
    say "the npm registry stopped answering during the install; omp not installed"
    exit 3
}

rc=0
timeout 600 npm install --prefix "$PREFIX" --save-exact --no-audit --no-fund \
    --loglevel=error "$BUN_PACKAGE@$BUN_VERSION" "$OMP_PACKAGE@$OMP_VERSION" \
    >"$PREFIX/npm-install.log" 2>&1 || rc=$?
if [ "$rc" -ne 0 ] && ! grep -q ETARGET "$PREFIX/npm-install.log"; then
    cat "$PREFIX/npm-install.log" >&2
    registry_lost || true
    say "npm install failed (status $rc)"
    exit 1
fi
if [ "$rc" -ne 0 ]; then
    say "$OMP_PACKAGE@$OMP_VERSION pins a dependency the registry does not have:"
    grep -m1 'No matching version' "$PREFIX/npm-install.log" | sed 's/^npm error /  /' >&2 || true
    say "installing its published tarball with the missing siblings resolved (npm overrides)"
    tarball=$(cd "$PREFIX" && timeout 300 npm pack --silent "$OMP_PACKAGE@$OMP_VERSION" \
        2>>"$PREFIX/npm-install.log" | tail -1) || { registry_lost || true;
        say "npm pack $OMP_PACKAGE@$OMP_VERSION failed"; exit 1; }
    # Writes the prefix's package.json: the tarball, bun, and one override
    # per sibling whose pinned version is not published.
    node - "$PREFIX" "$tarball" "$OMP_PACKAGE" "$BUN_PACKAGE@$BUN_VERSION" "$NATIVES_ARCH" <<'JS' >&2 || exit 1
const { execFileSync } = require("node:child_process");
const { writeFileSync } = require("node:fs");
const { join } = require("node:path");
const [prefix, tarball, pkg, bunSpec, arch] = process.argv.slice(2);
const manifest = JSON.parse(execFileSync("tar", ["-xOzf", join(prefix, tarball), "package/package.json"]));
const scope = pkg.split("/")[0] + "/";
// Loaded by each other at their exact release: one version for the three.
const lockstep = [scope + "pi-utils", scope + "pi-natives", scope + `pi-natives-${arch}`];
const cmp = (a, b) => { const x = a.split(".").map(Number), y = b.split(".").map(Number);
	for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i]; return 0; };
const published = (name) => {
	const out = execFileSync("npm", ["view", name, "versions", "--json", "--fetch-retries=1"],
		{ encoding: "utf8", timeout: 60000 });
	const v = JSON.parse(out);
	return (Array.isArray(v) ? v : [v]).filter((s) => /^\d+\.\d+\.\d+$/.test(s));
};
const wanted = manifest.dependencies;
const names = [...new Set([...Object.keys(wanted).filter((n) => n.startsWith(scope)), ...lockstep])];
const versions = Object.fromEntries(names.map((n) => [n, published(n)]));
const below = (list, w) => list.filter((v) => cmp(v, w) <= 0 && v.split(".")[0] === w.split(".")[0]).sort(cmp);
const overrides = {};
for (const n of names) {
	if (lockstep.includes(n)) continue;
	const w = wanted[n];
	if (versions[n].includes(w)) continue;
	const near = below(versions[n], w).at(-1);
	if (!near) throw new Error(`${n}@${w} is not published and no ${w.split(".")[0]}.x below it is`);
	overrides[n] = near;
}
const pin = manifest.version;
const common = below(versions[lockstep[0]], pin).filter((v) => lockstep.every((n) => versions[n].includes(v))).at(-1);
if (!common) throw new Error(`no release below ${pin} publishes all of ${lockstep.join(", ")}`);
for (const n of lockstep) overrides[n] = common;
for (const [n, v] of Object.entries(overrides)) console.error(`omp-install:   ${n}: ${wanted[n] ?? pin} -> ${v}`);
const [bunName, bunVersion] = [bunSpec.slice(0, bunSpec.lastIndexOf("@")), bunSpec.slice(bunSpec.lastIndexOf("@") + 1)];
writeFileSync(join(prefix, "package.json"), JSON.stringify({
	name: "retryd-omp-scratch", private: true,
	dependencies: { [pkg]: `file:./${tarball}`, [bunName]: bunVersion },
	overrides,
}, null, 1) + "\n");
JS
    rc=0
    (cd "$PREFIX" && timeout 600 npm install --no-audit --no-fund --loglevel=error) \
        >>"$PREFIX/npm-install.log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
        tail -20 "$PREFIX/npm-install.log" >&2
        registry_lost || true
        say "npm install of the tarball with overrides failed (status $rc)"
        exit 1
    fi
fi

if installed; then
    runnable
    loads
    say "omp $OMP_VERSION and bun $BUN_VERSION installed: $BUN"
    echo "$BUN"
    exit 0
fi
say "npm install finished but $BUN or $OMP_JSON is missing or of another version"
exit 1
