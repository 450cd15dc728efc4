#!/usr/bin/env node
// Stands in for pi's dist/cli.js. pi's RpcClient runs
// `node <cliPath> --mode rpc [args...]`; with cliPath pointing here, the same
// arguments go to retryd ($RETRYD), which gets our stdin, stdout and stderr.
import { spawn } from "node:child_process";

const bin = process.env.RETRYD;
if (!bin) {
	console.error("retryd-shim: set RETRYD to the retryd binary");
	process.exit(127);
}
const child = spawn(bin, process.argv.slice(2), { stdio: "inherit" });
for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"]) {
	process.on(sig, () => child.kill(sig));
}
child.on("error", (err) => {
	console.error(`retryd-shim: cannot start ${bin}: ${err.message}`);
	process.exit(127);
});
child.on("exit", (code, signal) => {
	process.exit(code ?? 128 + ({ SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 }[signal] ?? 0));
});
