// The package in clients/js (RetrydClient, LineFramer, the retryd-rpc
// launcher) against the real daemon. `make interop` runs this file:
//
//   RETRYD=build/retryd node --test tests/interop/js_client.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { LineFramer, RetrydClient, RetrydError } from "../../clients/js/index.mjs";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const RETRYD = resolve(process.env.RETRYD ?? join(ROOT, "build", "retryd"));
const LAUNCHER = join(ROOT, "clients", "js", "bin", "retryd-rpc.mjs");

async function withClient(plan, sets, fn) {
	const home = mkdtempSync(join(tmpdir(), "retryd-js-"));
	const args = ["--no-session", "--sim-plan", JSON.stringify(plan)];
	for (const [k, v] of Object.entries(sets)) args.push("--set", `${k}=${JSON.stringify(v)}`);
	const client = new RetrydClient({
		bin: RETRYD,
		args,
		env: { HOME: home, XDG_CONFIG_HOME: join(home, "config"), XDG_STATE_HOME: join(home, "state") },
	});
	await client.start();
	try {
		await fn(client, home);
	} finally {
		assert.equal(await client.stop(), 0);
		rmSync(home, { recursive: true, force: true });
	}
}

const types = (events) => events.map((e) => e.type);

test("LineFramer splits at LF only: U+2028/U+2029 stay inside, a character cut across chunks is whole", () => {
	const framer = new LineFramer();
	const bytes = Buffer.from('{"t":"a\u2028b\u2029c é"}\r\n{"n":1}\n{"part', "utf8");
	const cut = bytes.indexOf(Buffer.from("é")) + 1; // inside the two bytes of é
	const lines = [...framer.push(bytes.subarray(0, cut)), ...framer.push(bytes.subarray(cut))];
	assert.deepEqual(lines, ['{"t":"a\u2028b\u2029c é"}', '{"n":1}']);
	assert.deepEqual(framer.push(Buffer.from('ial":true}\n')), ['{"partial":true}']);
});

test("LineFramer reads an 8 MiB line fed in 64 KiB chunks", () => {
	const framer = new LineFramer();
	const line = JSON.stringify({ text: "x".repeat(8 << 20) });
	const bytes = Buffer.from(`${line}\n`);
	const out = [];
	for (let i = 0; i < bytes.length; i += 65536) out.push(...framer.push(bytes.subarray(i, i + 65536)));
	assert.equal(out.length, 1);
	assert.equal(out[0].length, line.length);
});

test("prompt, events by listener, then getState, getLastAssistantText and getMessages", { timeout: 30000 }, async () => {
	await withClient([{ text: "hello from retryd" }], {}, async (client) => {
		const seen = [];
		const ended = new Promise((done) => client.onEvent((e) => { seen.push(e.type); if (e.type === "agent_end") done(); }));
		await client.prompt("hi");
		await ended;
		assert.equal(seen[0], "agent_start");
		const state = await client.getState();
		assert.equal(state.isStreaming, false);
		assert.equal(state.autoRetryEnabled, true);
		assert.equal(state.messageCount, 2);
		assert.equal(await client.getLastAssistantText(), "hello from retryd");
		assert.deepEqual((await client.getMessages()).map((m) => m.role), ["user", "assistant"]);
	});
});

test("promptAndWait returns after the whole retry chain, with auto_retry_start/end and the final answer", { timeout: 30000 }, async () => {
	const plan = [{ error: "503 Service Unavailable" }, { error: "overloaded_error" }, { text: "final answer" }];
	await withClient(plan, { "retry.baseDelayMs": 50 }, async (client) => {
		const run = await client.promptAndWait("hi", { timeoutMs: 20000 });
		assert.equal(run.success, true);
		assert.equal(run.text, "final answer");
		assert.equal(run.retries, 2);
		assert.equal(run.error, null);
		const starts = run.events.filter((e) => e.type === "auto_retry_start");
		assert.deepEqual(starts.map((e) => e.attempt), [1, 2]);
		assert.equal(starts[0].errorMessage, "503 Service Unavailable");
		assert.deepEqual(run.events.find((e) => e.type === "auto_retry_end"), { type: "auto_retry_end", success: true, attempt: 2 });
		assert.deepEqual(types(run.events).slice(-2), ["agent_end", "prompt_result"]);
		assert.equal(run.status, "completed");
		assert.equal(types(run.events).filter((t) => t === "agent_end").length, 1);
		assert.equal((await client.getState()).isRetrying, false);
	});
});

test("a failed run's result comes from its prompt_result: status, error, retryable, httpStatus", { timeout: 30000 }, async () => {
	const plan = [{ error: "429 Too Many Requests", status: 429 }, { error: "429 Too Many Requests", status: 429 }];
	await withClient(plan, { "retry.baseDelayMs": 20, "retry.maxRetries": 1 }, async (client) => {
		const run = await client.promptAndWait("hi", { timeoutMs: 20000 });
		assert.deepEqual([run.success, run.status, run.error, run.retryable, run.httpStatus, run.provider, run.model],
			[false, "error", "429 Too Many Requests", true, 429, "sim", "sim-1"]);
		assert.equal(run.promptResult, run.events.at(-1));
		assert.equal(run.retries, 1);
	});
});

test("waitForSettled resolves at once when idle, else only after the chain and the queue", { timeout: 30000 }, async () => {
	await withClient([{ error: "503" }, { text: "first" }, { text: "queued" }], { "retry.baseDelayMs": 50 }, async (client) => {
		await client.waitForSettled({ timeoutMs: 5000 });
		const seen = [];
		client.onEvent((e) => seen.push(e.type));
		await client.prompt("one");
		await client.request({ type: "follow_up", message: "two" });
		await client.waitForSettled({ timeoutMs: 20000 });
		assert.equal(seen.at(-1), "session_settled");
		assert.equal(seen.filter((t) => t === "message_end").length, 5);
		const state = await client.getState();
		assert.deepEqual([state.isSettled, state.isStreaming, state.pendingMessageCount], [true, false, 0]);
	});
});

test("abortRetry during a backoff cancels it at once; the run reports cancelled", { timeout: 30000 }, async () => {
	await withClient([{ error: "503" }, { text: "never" }], { "retry.baseDelayMs": 30000 }, async (client) => {
		let during = null;
		client.onEvent((e) => {
			if (e.type !== "auto_retry_start") return;
			client.getState().then((s) => { during = s; return client.abortRetry(); });
		});
		const t0 = Date.now();
		const run = await client.promptAndWait("hi", { timeoutMs: 20000 });
		assert.ok(Date.now() - t0 < 10000, "waited out the 30 s backoff");
		assert.equal(during.isRetrying, true);
		assert.equal(run.success, false);
		assert.equal(run.cancelled, true);
		assert.equal(run.error, "Retry cancelled");
		assert.ok(!run.events.some((e) => e.type === "message_end" && e.message.content?.[0]?.text === "never"));
	});
});

test("setAutoRetry(false, {persist:false}) turns retries off for this daemon only and writes no file", { timeout: 30000 }, async () => {
	await withClient([{ error: "503" }, { text: "not reached" }], { "retry.baseDelayMs": 50 }, async (client, home) => {
		assert.deepEqual(await client.setAutoRetry(false, { persist: false }), { persisted: false });
		assert.equal((await client.getState()).autoRetryEnabled, false);
		const run = await client.promptAndWait("hi", { timeoutMs: 20000 });
		assert.equal(run.retries, 0);
		assert.equal(run.success, false);
		assert.equal(run.stopReason, "error");
		assert.equal(run.errorMessage, "503");
		assert.equal(existsSync(join(home, "config", "retryd", "settings.json")), false);
	});
});

test("U+2028 and U+2029 in a prompt and in the answer arrive whole", { timeout: 30000 }, async () => {
	const answer = "line\u2028separator\u2029paragraph \u00e9\u{1F600}";
	await withClient([{ text: answer }], {}, async (client) => {
		const prompt = "ask\u2028me\u2029twice";
		const run = await client.promptAndWait(prompt, { timeoutMs: 20000 });
		assert.equal(run.text, answer);
		const user = (await client.getMessages())[0];
		assert.equal(typeof user.content === "string" ? user.content : user.content[0].text, prompt);
	});
});

test("a 4 MiB prompt goes out and comes back in one line each way", { timeout: 30000 }, async () => {
	await withClient([{ text: "ok" }], {}, async (client) => {
		const big = "y".repeat(4 << 20);
		const run = await client.promptAndWait(big, { timeoutMs: 20000 });
		assert.equal(run.text, "ok");
		const user = (await client.getMessages())[0];
		assert.equal((typeof user.content === "string" ? user.content : user.content[0].text).length, big.length);
	});
});

test("events() iterates a run's events and ends when the daemon stops", { timeout: 30000 }, async () => {
	await withClient([{ error: "503" }, { text: "iterated" }], { "retry.baseDelayMs": 50 }, async (client) => {
		const seen = [];
		const all = client.events();
		await client.prompt("hi");
		for await (const e of all) {
			seen.push(e.type);
			if (e.type === "agent_end") break;
		}
		assert.ok(seen.indexOf("auto_retry_start") < seen.indexOf("auto_retry_end"));
		const after = client.events();
		const stopped = client.stop();
		const rest = [];
		for await (const e of after) rest.push(e);
		assert.equal(await stopped, 0);
		assert.deepEqual(rest, []);
		await client.start(); // withClient's stop() expects a running daemon
	});
});

test("a refused command rejects with RetrydError naming it and the daemon's reason", { timeout: 30000 }, async () => {
	await withClient([], {}, async (client) => {
		await assert.rejects(client.request({ type: "no_such_command" }), (err) => {
			assert.ok(err instanceof RetrydError);
			assert.equal(err.command, "no_such_command");
			assert.match(err.message, /^no_such_command: .*no_such_command/);
			return true;
		});
		await assert.rejects(client.request({ type: "set_auto_retry" }), /set_auto_retry: missing required field "enabled"/);
	});
});

test("start() of a daemon that cannot start says why, with its stderr", { timeout: 30000 }, async () => {
	const bad = new RetrydClient({ bin: RETRYD, args: ["--provider", "no-such-provider"] });
	await assert.rejects(bad.start(), /status 2\): .*no-such-provider/);
	const missing = new RetrydClient({ bin: join(tmpdir(), "no-such-retryd") });
	await assert.rejects(missing.start(), /cannot run .*no-such-retryd/);
});

test("the launcher runs $RETRYD with its arguments and passes the exit status through", () => {
	const env = { ...process.env, RETRYD };
	const version = spawnSync(process.execPath, [LAUNCHER, "--version"], { env, encoding: "utf8", timeout: 10000 });
	assert.equal(version.status, 0);
	assert.match(version.stdout, /^retryd /);
	const bad = spawnSync(process.execPath, [LAUNCHER, "--no-such-flag"], { env, encoding: "utf8", timeout: 10000 });
	assert.equal(bad.status, 2);
	assert.match(bad.stderr, /no-such-flag/);
	const rpc = spawnSync(process.execPath, [LAUNCHER, "--mode", "rpc", "--no-session"], {
		env: { ...env, HOME: tmpdir() }, input: '{"id":"s","type":"get_state"}\n', encoding: "utf8", timeout: 10000,
	});
	assert.equal(rpc.status, 0);
	const lines = rpc.stdout.trim().split("\n").map((l) => JSON.parse(l));
	assert.equal(lines[0].type, "ready");
	assert.equal(lines[1].id, "s");
	assert.equal(lines[1].success, true);
});

test("the launcher with no retryd anywhere says so in one line and exits 127", () => {
	const env = { PATH: "/nonexistent", HOME: tmpdir() };
	const r = spawnSync(process.execPath, [LAUNCHER, "--mode", "rpc"], { env, encoding: "utf8", timeout: 10000 });
	assert.equal(r.status, 127);
	assert.equal(r.stderr.trim().split("\n").length, 1);
	assert.match(r.stderr, /^retryd-rpc: no retryd executable found/);
});
