// retryd driven by pi's own RpcClient (npm @mariozechner/pi-coding-agent,
// installed into build/pi by scripts/pi-install.sh), through the launcher of
// the retryd npm package (clients/js/bin/retryd-rpc.mjs), which runs $RETRYD
// with RpcClient's arguments. `make interop` runs this file:
//
//   RETRYD=build/retryd PI_PREFIX=build/pi node --test tests/interop/rpc_client.test.mjs
//
// The point of the retry tests: RpcClient's promptAndWait / waitForIdle end
// at the first agent_end. pi's own daemon sends one per attempt, so they
// return while a retry is pending (pi issue #4314); retryd sends one per
// prompt, after the whole chain, so they return with the final answer.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

// The daemon's runtime dir: the test's own, or with RETRYD_TEST_SHARED_RUNTIME=1
// the caller's (make interop with no private runtime dir, beside its other daemons).
const runtimeDir = (dir) => (process.env.RETRYD_TEST_SHARED_RUNTIME ? {} : { XDG_RUNTIME_DIR: dir });

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "..", "..");
const RETRYD = resolve(process.env.RETRYD ?? join(ROOT, "build", "retryd"));
const PI_PREFIX = resolve(process.env.PI_PREFIX ?? join(ROOT, "build", "pi"));
const PKG_DIR = resolve(process.env.PI_PKG_DIR ?? join(PI_PREFIX, "node_modules", "@mariozechner", "pi-coding-agent"));
const LAUNCHER = join(ROOT, "clients", "js", "bin", "retryd-rpc.mjs");

// 0.73.1 exports RpcClient from the package root ("." → dist/index.js);
// older releases (0.58) did not, so fall back to its file in dist/.
async function loadRpcClient() {
	const pkg = JSON.parse(readFileSync(join(PKG_DIR, "package.json"), "utf8"));
	const root = pkg.exports?.["."]?.import ?? pkg.main ?? "dist/index.js";
	const mod = await import(pathToFileURL(join(PKG_DIR, root)).href);
	if (typeof mod.RpcClient === "function") {
		return { RpcClient: mod.RpcClient, version: pkg.version, from: "package root" };
	}
	const direct = await import(pathToFileURL(join(PKG_DIR, "dist/modes/rpc/rpc-client.js")).href);
	return { RpcClient: direct.RpcClient, version: pkg.version, from: "dist/modes/rpc/rpc-client.js" };
}

const { RpcClient, version, from } = await loadRpcClient();
console.log(`pi-coding-agent ${version}: RpcClient from the ${from}`);

async function withClient(plan, sets, fn, { session = false } = {}) {
	const home = mkdtempSync(join(tmpdir(), "retryd-interop-"));
	const args = [...(session ? [] : ["--no-session"]), "--sim-plan", JSON.stringify(plan)];
	for (const [k, v] of Object.entries(sets)) args.push("--set", `${k}=${JSON.stringify(v)}`);
	const client = new RpcClient({
		cliPath: LAUNCHER,
		args,
		env: {
			RETRYD,
			HOME: home,
			XDG_CONFIG_HOME: join(home, "config"),
			XDG_STATE_HOME: join(home, "state"),
			...runtimeDir(home),
		},
	});
	await client.start();
	try {
		await fn(client, home);
	} finally {
		await client.stop();
		rmSync(home, { recursive: true, force: true });
	}
}

const lastAssistant = (messages) => messages.filter((m) => m.role === "assistant").at(-1);
const textOf = (m) => m.content.filter((c) => c.type === "text").map((c) => c.text).join("");
const count = (events, type) => events.filter((e) => e.type === type).length;
// pi up to 0.73 resolves promptAndWait on agent_end; pi 1.6 on agent_settled,
// which retryd sends right after its run's agent_end (and prompt_result).
const runEnd = (events) => events.filter((e) => e.type === "agent_end").at(-1);
const SETTLES = Number.parseInt(version, 10) >= 1;
function assertEndsTheRun(events) {
	assert.equal(events.at(-1).type, SETTLES ? "agent_settled" : "agent_end");
	if (SETTLES) assert.deepEqual(events.at(-1), { type: "agent_settled", aborted: false });
}

test("prompt, then getState and getLastAssistantText", { timeout: 30000 }, async () => {
	await withClient([{ text: "hello from retryd" }], {}, async (client) => {
		const idle = client.waitForIdle(20000);
		await client.prompt("hi");
		await idle;
		const state = await client.getState();
		assert.equal(state.isStreaming, false);
		assert.equal(state.autoRetryEnabled, true);
		assert.equal(state.isRetrying, false);
		assert.equal(state.messageCount, 2);
		assert.equal(await client.getLastAssistantText(), "hello from retryd");
		const messages = await client.getMessages();
		assert.deepEqual(messages.map((m) => m.role), ["user", "assistant"]);
	});
});

test("promptAndWait returns after the whole retry chain, with the final answer", { timeout: 30000 }, async () => {
	const plan = [{ error: "503 Service Unavailable" }, { error: "overloaded_error" }, { text: "final answer" }];
	await withClient(plan, { "retry.baseDelayMs": 50 }, async (client) => {
		const events = await client.promptAndWait("hi", undefined, 20000);
		assertEndsTheRun(events);
		assert.equal(count(events, "agent_end"), 1);
		assert.equal(count(events, "auto_retry_start"), 2);
		const end = events.find((e) => e.type === "auto_retry_end");
		assert.deepEqual(end, { type: "auto_retry_end", success: true, attempt: 2 });
		const final = lastAssistant(runEnd(events).messages);
		assert.equal(final.stopReason, "stop");
		assert.equal(textOf(final), "final answer");
		const state = await client.getState();
		assert.equal(state.isStreaming, false);
		assert.equal(state.isRetrying, false);
		assert.equal(state.retryAttempt, 0);
	});
});

test("waitForIdle does not return while a retry is pending", { timeout: 30000 }, async () => {
	const plan = [{ error: "429 rate limit" }, { text: "after the wait" }];
	await withClient(plan, { "retry.baseDelayMs": 700 }, async (client) => {
		const seen = [];
		client.onEvent((e) => seen.push(e.type));
		const idle = client.waitForIdle(20000);
		const t0 = Date.now();
		await client.prompt("hi");
		await idle;
		assert.ok(Date.now() - t0 >= 650, `returned after ${Date.now() - t0} ms, inside the backoff`);
		assert.ok(seen.indexOf("auto_retry_end") < seen.indexOf("agent_end"));
		assert.equal(await client.getLastAssistantText(), "after the wait");
	});
});

test("setAutoRetry(false) stops retrying; the failure is final", { timeout: 30000 }, async () => {
	await withClient([{ error: "503" }, { text: "not reached" }], { "retry.baseDelayMs": 50 }, async (client) => {
		await client.setAutoRetry(false);
		assert.equal((await client.getState()).autoRetryEnabled, false);
		const events = await client.promptAndWait("hi", undefined, 20000);
		assert.equal(count(events, "auto_retry_start"), 0);
		const final = lastAssistant(runEnd(events).messages);
		assert.equal(final.stopReason, "error");
		assert.equal(final.errorMessage, "503");
		await client.setAutoRetry(true);
		assert.equal((await client.getState()).autoRetryEnabled, true);
	});
});

test("abortRetry during a backoff cancels it at once", { timeout: 30000 }, async () => {
	await withClient([{ error: "503" }, { text: "never" }], { "retry.baseDelayMs": 30000 }, async (client) => {
		let during = null;
		client.onEvent((e) => {
			if (e.type !== "auto_retry_start") return;
			(async () => {
				during = await client.getState();
				await client.abortRetry();
			})();
		});
		const t0 = Date.now();
		const events = await client.promptAndWait("hi", undefined, 20000);
		assert.ok(Date.now() - t0 < 10000, "waited out the 30 s backoff");
		assert.equal(during.isRetrying, true);
		assert.equal(during.isStreaming, true);
		assert.equal(during.retryAttempt, 1);
		const end = events.find((e) => e.type === "auto_retry_end");
		assert.deepEqual(end, { type: "auto_retry_end", success: false, attempt: 1, finalError: "Retry cancelled" });
		assertEndsTheRun(events);
		assert.ok(!events.some((e) => e.type === "message_end" && textOf(e.message) === "never"));
		assert.equal((await client.getState()).isRetrying, false);
	});
});

test("unknown commands answer with their id, so RpcClient does not wait 30 s", { timeout: 30000 }, async () => {
	await withClient([], {}, async (client) => {
		const t0 = Date.now();
		await assert.rejects(client.compact(), /compact is not supported/);
		await assert.rejects(client.cycleModel(), /cycle_model is not supported/);
		assert.ok(Date.now() - t0 < 5000);
	});
});

// The README's "editor or pi RpcClient" recipe, run as written: only the
// launcher path (the repository's, not an install's) and the provider (the
// sim provider, for an answer without an account) are put in.
test("the README's RpcClient recipe runs as written", { timeout: 30000 }, async () => {
	const readme = readFileSync(join(ROOT, "README.md"), "utf8");
	const recipe = readme.match(/```js\n([\s\S]*?)```/);
	assert.ok(recipe, "README.md lost its js recipe");
	let code = recipe[1];
	assert.match(code, /cliPath: .*retryd-rpc\.mjs`,/);
	code = code.replace(/cliPath: .*,\n/, `cliPath: ${JSON.stringify(LAUNCHER)},\n`);
	// The recipe names pi 1.6's package; an older pi is the same recipe under its old name.
	const pkgName = JSON.parse(readFileSync(join(PKG_DIR, "package.json"), "utf8")).name;
	code = code.replace('"@earendil-works/pi-coding-agent"', JSON.stringify(pkgName));
	code = code.replace(/args: \[[^\]]*\]/, `args: ${JSON.stringify([
		"--no-session", "--set", "retry.baseDelayMs=10",
		"--sim-plan", JSON.stringify([{ error: "529 overloaded_error" }, { text: "one line" }])])}`);
	// Placed beside pi's node_modules, so its import resolves as in a user's project.
	const file = join(dirname(dirname(dirname(PKG_DIR))), "readme-recipe.mjs");
	writeFileSync(file, code);
	const home = mkdtempSync(join(tmpdir(), "retryd-readme-"));
	try {
		const r = spawnSync(process.execPath, [file], {
			env: { ...process.env, RETRYD, HOME: home, XDG_CONFIG_HOME: join(home, "c"),
				XDG_STATE_HOME: join(home, "s"), ...runtimeDir(home) },
			encoding: "utf8", timeout: 20000,
		});
		assert.equal(r.status, 0, r.stderr);
		assert.equal(r.stdout, "one line\n");
		assert.match(r.stderr, /retry 1: 529 overloaded_error/);
	} finally {
		rmSync(file, { force: true });
		rmSync(home, { recursive: true, force: true });
	}
});

// --- pi 1.6's RpcClient: every method that means something to retryd.

const test16 = SETTLES ? test : test.skip;
if (!SETTLES) console.log(`pi ${version} predates agent_settled: the pi 1.6 tests are skipped`);

/** Resolves at the next event of this type. */
function nextEvent(client, type, timeoutMs = 15000) {
	return new Promise((ok, fail) => {
		const timer = setTimeout(() => fail(new Error(`no ${type} within ${timeoutMs} ms`)), timeoutMs);
		const off = client.onEvent((e) => {
			if (e.type !== type) return;
			clearTimeout(timer);
			off();
			ok(e);
		});
	});
}
const userTexts = (events) => events.filter((e) => e.type === "message_end" && e.message.role === "user")
	.map((e) => textOf(e.message));

test16("pi 1.6 prompt answers disposition started; promptAndWait's events end with agent_settled after agent_end{willRetry:false}", { timeout: 30000 }, async () => {
	await withClient([{ error: "503" }, { text: "one" }, { text: "two" }], { "retry.baseDelayMs": 20 }, async (client) => {
		const settled = nextEvent(client, "agent_settled");
		assert.equal(await client.prompt("hi"), "started");
		await settled;
		const events = await client.promptAndWait("again", undefined, 20000);
		const end = runEnd(events);
		assert.equal(end.willRetry, false);
		assert.ok(events.indexOf(end) < events.length - 1);
		assertEndsTheRun(events);
		assert.equal(await client.getLastAssistantText(), "two");
	});
});

test16("pi 1.6 steer and followUp during a backoff are queued, delivered after the retry in order; waitForIdle waits for all", { timeout: 30000 }, async () => {
	await withClient([{ error: "503" }], { "retry.baseDelayMs": 400 }, async (client) => {
		const events = [];
		client.onEvent((e) => events.push(e));
		const backoff = nextEvent(client, "auto_retry_start");
		const idle = client.waitForIdle(20000);
		assert.equal(await client.prompt("hi"), "started");
		await backoff;
		assert.equal(await client.steer("s1"), "queued");
		assert.equal(await client.followUp("f1"), "queued");
		assert.equal((await client.getState()).pendingMessageCount, 2);
		await idle;
		assert.deepEqual(userTexts(events), ["hi", "s1", "f1"]);
		assert.equal(count(events, "agent_settled"), 1);
		assert.ok(events.findIndex((e) => e.type === "agent_settled") >
			events.findLastIndex((e) => e.type === "agent_end"), "agent_settled before the last agent_end");
		assert.equal(await client.getLastAssistantText(), "f1");
	});
});

test16("pi 1.6 abort during a streaming attempt: waitForIdle returns at once, agent_settled says aborted", { timeout: 30000 }, async () => {
	await withClient([{ hang: true }], {}, async (client) => {
		const streaming = nextEvent(client, "message_start");
		const collected = client.collectEvents(20000);
		await client.prompt("hi");
		await streaming;
		const t0 = Date.now();
		await client.abort();
		const events = await collected;
		assert.ok(Date.now() - t0 < 5000);
		assert.equal(lastAssistant(runEnd(events).messages).stopReason, "aborted");
		assert.deepEqual(events.at(-1), { type: "agent_settled", aborted: true });
		assert.equal((await client.getState()).isStreaming, false);
	});
});

test16("pi 1.6 getMessages, getSessionStats, models and newSession after a three-attempt chain", { timeout: 30000 }, async () => {
	const plan = [{ error: "503" }, { error: "overloaded_error" }, { text: "final" }];
	await withClient(plan, { "retry.baseDelayMs": 20 }, async (client) => {
		await client.promptAndWait("hi", undefined, 20000);
		const messages = await client.getMessages();
		assert.deepEqual(messages.map((m) => [m.role, m.stopReason]), [["user", undefined], ["assistant", "stop"]]);
		const stats = await client.getSessionStats();
		assert.equal(stats.userMessages, 1);
		assert.equal(stats.assistantMessages, 1);
		assert.equal(typeof stats.sessionId, "string");
		const models = await client.getAvailableModels();
		assert.ok(models.some((m) => m.provider === "sim" && m.id === "sim-1"));
		assert.deepEqual([(await client.setModel("sim", "sim-1")).id], ["sim-1"]);
		await assert.rejects(client.setModel("sim", "no-such-model"));
		assert.deepEqual(await client.newSession(), { cancelled: false });
		assert.equal((await client.getState()).messageCount, 0);
	});
});

test16("pi 1.6 thinking levels: setThinkingLevel, getAvailableThinkingLevels lists the sim model's", { timeout: 30000 }, async () => {
	await withClient([], {}, async (client) => {
		await client.setThinkingLevel("off");
		assert.equal((await client.getState()).thinkingLevel, "off");
		await client.setSteeringMode("all");
		await client.setFollowUpMode("all");
		const state = await client.getState();
		assert.deepEqual([state.steeringMode, state.followUpMode], ["all", "all"]);
		const levels = await client.getAvailableThinkingLevels();
		assert.ok(Array.isArray(levels), "levels is a list");
		// The sim model has no reasoning: "off" is all it offers, as in pi.
		assert.deepEqual(levels, ["off"]);
	});
});

test16("pi 1.6 clearQueue during a backoff hands back the queued texts; only the prompt runs", { timeout: 30000 }, async () => {
	await withClient([{ error: "503" }, { text: "the retry's answer" }], { "retry.baseDelayMs": 500 }, async (client) => {
		const events = [];
		client.onEvent((e) => events.push(e));
		const backoff = nextEvent(client, "auto_retry_start");
		const idle = client.waitForIdle(20000);
		await client.prompt("hi");
		await backoff;
		await client.steer("s1");
		await client.followUp("f1");
		assert.deepEqual(await client.clearQueue(), { steering: ["s1"], followUp: ["f1"] });
		assert.equal((await client.getState()).pendingMessageCount, 0);
		await idle;
		// Cleared: only the prompt and its two attempts ran.
		assert.equal(count(events, "message_end"), 3);
		assert.deepEqual(userTexts(events), ["hi"]);
		assert.equal(await client.getLastAssistantText(), "the retry's answer");
	});
});

test16("pi 1.6 getEntries lists the session file's entries, since an entry id too", { timeout: 30000 }, async () => {
	await withClient([{ text: "kept" }], {}, async (client) => {
		await client.promptAndWait("hi", undefined, 20000);
		const { entries, leafId } = await client.getEntries();
		assert.ok(entries.length >= 2, `${entries.length} entries`);
		for (const e of entries) assert.equal(typeof e.id, "string");
		assert.equal(leafId, entries.at(-1).id);
		const rest = await client.getEntries(entries[0].id);
		assert.deepEqual(rest.entries.map((e) => e.id), entries.slice(1).map((e) => e.id));
		await assert.rejects(client.getEntries("no-such-entry"));
	}, { session: true });
});

test16("pi 1.6 what retryd does not do is refused at once; the harmless setters and lists answer", { timeout: 30000 }, async () => {
	await withClient([], {}, async (client) => {
		const t0 = Date.now();
		for (const call of [() => client.compact(), () => client.cycleModel(), () => client.bash("true"),
			() => client.exportHtml(), () => client.fork("x"), () => client.clone(),
			() => client.getForkMessages(), () => client.getTree(),
			() => client.switchSession("/nonexistent.jsonl")]) {
			await assert.rejects(call());
		}
		// The sim model has no reasoning: cycling answers null, as pi does for such a model.
		assert.equal(await client.cycleThinkingLevel(), null);
		assert.deepEqual(await client.getCommands(), []);
		await client.setAutoCompaction(false);
		await client.abortBash();
		await client.setSessionName("interop");
		assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
		assert.equal((await client.getState()).isStreaming, false);
	});
});
