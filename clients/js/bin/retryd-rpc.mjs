#!/usr/bin/env node
// Runs the retryd daemon with this process's arguments, stdin, stdout and
// stderr, and exits as it does. It exists because pi's RpcClient always runs
// `node <cliPath> --mode rpc ...`: with cliPath pointing here, that is retryd.
// The daemon: $RETRYD, else the retryd installed beside this package, else
// one beside the path this was run by (a symlink in <prefix>/bin), else
// `retryd` on PATH (findDaemon in ../index.mjs).
import { spawn } from "node:child_process";
import { constants } from "node:os";
import { dirname } from "node:path";
import { findDaemon } from "../index.mjs";

const FORWARDED = ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR2"];

const bin = findDaemon(process.env, process.argv[1] ? [dirname(process.argv[1])] : []);
if (!bin) {
	console.error("retryd-rpc: no retryd executable found: set RETRYD, install retryd beside this package (make install), or put it on PATH");
	process.exit(127);
}

const child = spawn(bin, process.argv.slice(2), { stdio: "inherit" });
const forward = (sig) => child.kill(sig);
for (const sig of FORWARDED) process.on(sig, forward);

child.on("error", (err) => {
	console.error(`retryd-rpc: cannot run ${bin}: ${err.message}`);
	process.exit(127);
});
child.on("exit", (code, signal) => {
	if (signal === null) process.exit(code);
	// Die of the same signal, so whoever waits on us sees what retryd saw.
	for (const sig of FORWARDED) process.off(sig, forward);
	process.kill(process.pid, signal);
	process.exit(128 + (constants.signals[signal] ?? 0));
});
