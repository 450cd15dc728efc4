// retryd driven by oh-my-pi's own RpcClient (npm @oh-my-pi/pi-coding-agent,
// src/modes/rpc/rpc-client.ts, run by bun; both installed into build/omp by
// scripts/omp-install.sh), over every RpcClient method that means something
// to retryd. `make interop` runs this file with the bun from build/omp:
//
//   RETRYD=build/retryd OMP_PREFIX=build/omp \
//       build/omp/node_modules/@oven/bun-linux-x64/bin/bun test tests/interop/omp_rpc_client.test.ts
//
// RpcClient runs `bun <cliPath> --mode rpc ...`; cliPath is the launcher of
// the retryd npm package (clients/js/bin/retryd-rpc.mjs), which runs $RETRYD.
// The tests that must see the daemon's answers themselves (omp's prompt(),
// steer(), abortAndPrompt() ... resolve on success:false too) use its
// `spawn` option to run the same launcher with stdout copied to a recorder.
// The steps follow reference/omp-traces/interop-omp.txt (omp against itself).
//
// The file runs against the pinned 18.2.3 and against the newest runnable
// 18.3.x (scripts/interop.sh sets OMP_PREFIX for each). 18.3 changed the
// lifecycle: prompt() throws on success:false, promptAndWait() resolves on
// the prompt's own prompt_result frame, waitForSettled() on get_state's
// isSettled or a session_settled frame; the "18.3" tests run only there.
import { expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

// The daemon's runtime dir: the test's own, or with RETRYD_TEST_SHARED_RUNTIME=1
// the caller's (make interop with no private runtime dir, beside its other daemons).
const runtimeDir = (dir: string): Record<string, string> =>
	process.env.RETRYD_TEST_SHARED_RUNTIME ? {} : { XDG_RUNTIME_DIR: dir };

const ROOT = resolve(import.meta.dir, "..", "..");
const RETRYD = resolve(process.env.RETRYD ?? join(ROOT, "build", "retryd"));
const OMP_PREFIX = resolve(process.env.OMP_PREFIX ?? join(ROOT, "build", "omp"));
const PKG = join(OMP_PREFIX, "node_modules", "@oh-my-pi", "pi-coding-agent");
const LAUNCHER = join(ROOT, "clients", "js", "bin", "retryd-rpc.mjs");

// RpcClient spawns "bun" by name: this bun, whichever PATH we were given.
process.env.PATH = `${dirname(process.execPath)}:${process.env.PATH ?? "/usr/bin:/bin"}`;

const { RpcClient, RpcCommandError } = await import(join(PKG, "src", "modes", "rpc", "rpc-client.ts"));
const version = JSON.parse(readFileSync(join(PKG, "package.json"), "utf8")).version;
console.log(`oh-my-pi ${version} RpcClient on bun ${Bun.version}, retryd ${RETRYD}`);
const atLeast = (v: string, w: string) => {
	const a = v.split(".").map(Number), b = w.split(".").map(Number);
	for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] > b[i];
	return true;
};
/** 18.3.1 and later: the prompt_result / session_settled lifecycle. */
const SETTLED_LIFECYCLE = atLeast(version, "18.3.1");
const test183 = SETTLED_LIFECYCLE ? test : test.skip;
if (!SETTLED_LIFECYCLE) console.log(`oh-my-pi ${version} predates prompt_result: the 18.3 tests are skipped`);


type Ev = { type: string; [k: string]: any };

interface Ctx {
	client: any;
	/** Every session event, in order (onSessionEvent: agent events and auto_retry_*). */
	events: Ev[];
	/** Every line retryd wrote (tapped clients only). */
	wire: Ev[];
	home: string;
}

function tappedSpawn(env: Record<string, string>, wire: Ev[]) {
	return (args: string[]) => {
		const p = Bun.spawn([process.execPath, LAUNCHER, ...args], {
			env: { ...process.env, ...env },
			stdin: "pipe",
			stdout: "pipe",
			stderr: "pipe",
		});
		// Each chunk is recorded before RpcClient reads it, so when one of its
		// calls resolves, the answer it got is already in `wire`.
		const dec = new TextDecoder();
		let rest = "";
		const recorded = p.stdout.pipeThrough(
			new TransformStream<Uint8Array, Uint8Array>({
				transform(chunk, out) {
					rest += dec.decode(chunk, { stream: true });
					let nl: number;
					while ((nl = rest.indexOf("\n")) !== -1) {
						wire.push(JSON.parse(rest.slice(0, nl)));
						rest = rest.slice(nl + 1);
					}
					out.enqueue(chunk);
				},
			}),
		);
		let stderr = "";
		void (async () => {
			for await (const chunk of p.stderr) stderr += new TextDecoder().decode(chunk);
		})();
		return {
			stdin: p.stdin,
			stdout: recorded,
			peekStderr: () => stderr,
			kill: (sig?: any) => p.kill(sig),
			exited: p.exited,
		};
	};
}

async function withOmp(plan: unknown[], sets: Record<string, unknown>, fn: (c: Ctx) => Promise<void>, tap = false) {
	const home = mkdtempSync(join(tmpdir(), "retryd-omp-"));
	const env = {
		RETRYD,
		HOME: home,
		XDG_CONFIG_HOME: join(home, "config"),
		XDG_STATE_HOME: join(home, "state"),
		...runtimeDir(home),
	};
	const args = ["--no-session", "--sim-plan", JSON.stringify(plan)];
	for (const [k, v] of Object.entries(sets)) args.push("--set", `${k}=${JSON.stringify(v)}`);
	const wire: Ev[] = [];
	const client = new RpcClient({ cliPath: LAUNCHER, args, env, ...(tap ? { spawn: tappedSpawn(env, wire) } : {}) });
	const events: Ev[] = [];
	client.onSessionEvent((e: Ev) => events.push(e));
	const t0 = Date.now();
	await client.start();
	expect(Date.now() - t0).toBeLessThan(10000);
	try {
		await fn({ client, events, wire, home });
	} finally {
		await client.stop();
		rmSync(home, { recursive: true, force: true });
	}
}

/** Resolves at the next session event of this type. */
function next(client: any, type: string, timeoutMs = 15000): Promise<Ev> {
	return new Promise((ok, fail) => {
		const timer = setTimeout(() => fail(new Error(`no ${type} within ${timeoutMs} ms`)), timeoutMs);
		const off = client.onSessionEvent((e: Ev) => {
			if (e.type !== type) return;
			clearTimeout(timer);
			off();
			ok(e);
		});
	});
}

/** Resolves once pred(events) holds, checked now and at each session event. */
function until(client: any, events: Ev[], pred: (events: Ev[]) => boolean, timeoutMs = 15000): Promise<void> {
	if (pred(events)) return Promise.resolve();
	return new Promise((ok, fail) => {
		const timer = setTimeout(() => { off(); fail(new Error(`not reached within ${timeoutMs} ms`)); }, timeoutMs);
		const off = client.onSessionEvent(() => {
			// Our listener may run before the recorder: look once it has the event.
			queueMicrotask(() => {
				if (!pred(events)) return;
				clearTimeout(timer);
				off();
				ok();
			});
		});
	});
}

const textOf = (m: any) =>
	typeof m.content === "string" ? m.content : m.content.filter((c: any) => c.type === "text").map((c: any) => c.text).join("");
const ends = (events: Ev[], role: string) => events.filter((e) => e.type === "message_end" && e.message.role === role);
const userTexts = (events: Ev[]) => ends(events, "user").map((e) => textOf(e.message));
const count = (events: Ev[], type: string) => events.filter((e) => e.type === type).length;
/** A prompt the daemon refuses: 18.2's prompt() resolves on success:false,
 * 18.3's throws the daemon's sentence. */
async function promptRefused(client: any, text: string) {
	if (SETTLED_LIFECYCLE) await expect(client.prompt(text)).rejects.toThrow(/already processing/);
	else await client.prompt(text);
}
/** The daemon's answer to the last command of this type (tapped clients). */
const answer = (wire: Ev[], command: string) => wire.filter((l) => l.type === "response" && l.command === command).at(-1);

test("T1 503,503,ok: state, promptAndWait after the whole chain, messages, models, stats, modes, newSession", async () => {
	await withOmp([{ error: "503" }, { error: "503" }, { text: "Hello world" }], { "retry.baseDelayMs": 50 }, async ({ client, events }) => {
		const idle = await client.getState();
		expect(idle.isStreaming).toBe(false);
		expect(idle.messageCount).toBe(0);
		expect(idle.autoRetryEnabled).toBe(true);

		const agentEvents = await client.promptAndWait("hi", undefined, 20000);
		expect(agentEvents.at(-1).type).toBe("agent_end");
		expect(count(agentEvents, "agent_end")).toBe(1);
		expect(textOf(ends(agentEvents, "assistant").at(-1).message)).toBe("Hello world");
		const retries = events.filter((e) => e.type.startsWith("auto_retry"));
		expect(retries.map((e) => [e.type, e.attempt])).toEqual([
			["auto_retry_start", 1],
			["auto_retry_start", 2],
			["auto_retry_end", 2],
		]);
		expect(retries[2].success).toBe(true);
		expect(events.findIndex((e) => e.type === "auto_retry_end")).toBeLessThan(events.findIndex((e) => e.type === "agent_end"));

		expect(await client.getLastAssistantText()).toBe("Hello world");
		const messages = await client.getMessages();
		expect(messages.map((m: any) => [m.role, m.stopReason])).toEqual([["user", undefined], ["assistant", "stop"]]);
		const after = await client.getState();
		expect(after.isStreaming).toBe(false);
		expect(after.isRetrying).toBe(false);
		expect(after.messageCount).toBe(2);

		const models = await client.getAvailableModels();
		expect(models.map((m: any) => `${m.provider}/${m.id}`)).toContain("sim/sim-1");
		const model = await client.setModel("sim", "sim-1");
		expect([model.provider, model.id]).toEqual(["sim", "sim-1"]);
		await expect(client.setModel("sim", "no-such-model")).rejects.toThrow(RpcCommandError);

		const stats = await client.getSessionStats();
		expect(stats.userMessages).toBe(1);
		expect(stats.assistantMessages).toBe(1);
		expect(typeof stats.sessionId).toBe("string");

		await client.setSteeringMode("all");
		await client.setFollowUpMode("all");
		const modes = await client.getState();
		expect([modes.steeringMode, modes.followUpMode]).toEqual(["all", "all"]);

		expect(await client.newSession()).toEqual({ cancelled: false });
		const fresh = await client.getState();
		expect(fresh.messageCount).toBe(0);
		expect(fresh.sessionId).not.toBe(after.sessionId);
		expect(await client.getMessages()).toEqual([]);
	});
}, 30000);

test("T1 getAvailableCommands() answers with a list (retryd has no slash commands)", async () => {
	await withOmp([], {}, async ({ client }) => {
		const commands = await client.getAvailableCommands();
		expect(Array.isArray(commands)).toBe(true);
		for (const c of commands) expect(typeof c.name).toBe("string");
	});
}, 30000);

test("T2 abortRetry during backoff: a prompt sent in the backoff is refused and never runs; the retry is cancelled", async () => {
	await withOmp([{ error: "503" }, { text: "never" }], { "retry.baseDelayMs": 30000 }, async ({ client, events, wire }) => {
		const backoff = next(client, "auto_retry_start");
		const idle = client.waitForIdle(20000);
		await client.prompt("hi");
		expect(answer(wire, "prompt").success).toBe(true);
		await backoff;

		const during = await client.getState();
		expect([during.isStreaming, during.isRetrying, during.messageCount]).toEqual([true, true, 1]);

		await promptRefused(client, "second");
		const refused = answer(wire, "prompt");
		expect(refused.success).toBe(false);
		expect(refused.error).toMatch(/already processing/);

		const t0 = Date.now();
		await client.abortRetry();
		expect(answer(wire, "abort_retry").success).toBe(true);
		await idle;
		expect(Date.now() - t0).toBeLessThan(5000);
		expect(events.find((e) => e.type === "auto_retry_end")).toEqual({
			type: "auto_retry_end", success: false, attempt: 1, finalError: "Retry cancelled",
		});
		expect(userTexts(events)).toEqual(["hi"]);
		expect(ends(events, "assistant").map((e) => textOf(e.message))).not.toContain("never");
		expect((await client.getState()).isRetrying).toBe(false);
	}, true);
}, 30000);

test("T2 a prompt during a streaming attempt is refused with success:false and never runs", async () => {
	await withOmp([{ hang: true }], {}, async ({ client, events, wire }) => {
		const started = next(client, "message_start");
		await client.prompt("hi");
		await started;
		await promptRefused(client, "second");
		const refused = answer(wire, "prompt");
		expect(refused.success).toBe(false);
		expect(refused.error).toMatch(/already processing/);
		const idle = client.waitForIdle(10000);
		await client.abort();
		await idle;
		expect(userTexts(events)).toEqual(["hi"]);
	}, true);
}, 30000);

test("T3 setAutoRetry(false): the failure is final; setAutoRetry(true): retried again", async () => {
	await withOmp([{ error: "503" }, { error: "503" }, { text: "ok after re-enable" }], { "retry.baseDelayMs": 50 }, async ({ client, events, home }) => {
		await client.setAutoRetry(false);
		expect((await client.getState()).autoRetryEnabled).toBe(false);
		// pi's set_auto_retry persists: the private HOME's settings file says so.
		const settings = join(home, "config", "retryd", "settings.json");
		expect(existsSync(settings)).toBe(true);
		expect(JSON.parse(readFileSync(settings, "utf8")).retry.enabled).toBe(false);

		const first = await client.promptAndWait("one", undefined, 20000);
		expect(count(events, "auto_retry_start")).toBe(0);
		expect(ends(first, "assistant").at(-1).message.stopReason).toBe("error");

		await client.setAutoRetry(true);
		expect((await client.getState()).autoRetryEnabled).toBe(true);
		const second = await client.promptAndWait("two", undefined, 20000);
		expect(count(events, "auto_retry_start")).toBe(1);
		expect(textOf(ends(second, "assistant").at(-1).message)).toBe("ok after re-enable");
		expect(events.filter((e) => e.type === "auto_retry_end").at(-1).success).toBe(true);
	});
}, 30000);

test("T4 abort() during backoff and during a streaming attempt settles waitForIdle at once", async () => {
	await withOmp([{ error: "503" }, { hang: true }], { "retry.baseDelayMs": 30000 }, async ({ client, events }) => {
		const backoff = next(client, "auto_retry_start");
		let idle = client.waitForIdle(20000);
		await client.prompt("hi");
		await backoff;
		let t0 = Date.now();
		await client.abort();
		await idle;
		expect(Date.now() - t0).toBeLessThan(5000);
		expect(events.find((e) => e.type === "auto_retry_end")).toEqual({
			type: "auto_retry_end", success: false, attempt: 1, finalError: "Retry cancelled",
		});

		const streaming = next(client, "message_start");
		idle = client.waitForIdle(20000);
		await client.prompt("again"); // the plan's next step hangs
		await streaming;
		expect((await client.getState()).isStreaming).toBe(true);
		t0 = Date.now();
		await client.abort();
		await idle;
		expect(Date.now() - t0).toBeLessThan(5000);
		expect(ends(events, "assistant").at(-1).message.stopReason).toBe("aborted");
		expect((await client.getState()).isStreaming).toBe(false);
	});
}, 30000);

test("T4 what retryd does not do is refused at once, not after RpcClient's 30 s timeout", async () => {
	await withOmp([], {}, async ({ client }) => {
		const t0 = Date.now();
		const refused = [
			() => client.compact(),
			() => client.cycleModel(),
			() => client.bash("true"),
			() => client.exportHtml(),
			() => client.handoff(),
			() => client.getBranchMessages(),
			() => client.branch("x"),
			() => client.switchSession("/nonexistent.jsonl"),
			() => client.getMessagesPage({ limit: 10 }),
			() => client.setFastMode(true),
			() => client.getSubagents(),
			() => client.getLoginProviders(),
		];
		for (const call of refused) await expect(call()).rejects.toThrow(RpcCommandError);
		// Thinking levels work as in pi: the sim model has no reasoning, so
		// cycling answers null and the level stays "off".
		expect(await client.cycleThinkingLevel()).toBeNull();
		// These ignore the answer, so they resolve; they must not hang either.
		await client.setThinkingLevel("off");
		await client.setAutoCompaction(false);
		await client.abortBash();
		expect(Date.now() - t0).toBeLessThan(5000);
		expect((await client.getState()).isStreaming).toBe(false);
	});
}, 30000);

test("T5 steer and followUp during backoff are delivered after the retry, in order", async () => {
	await withOmp([{ error: "503" }], { "retry.baseDelayMs": 1000 }, async ({ client, events, wire }) => {
		const backoff = next(client, "auto_retry_start");
		const idle = client.waitForIdle(20000);
		await client.prompt("hi");
		await backoff;
		await client.steer("s1");
		expect(answer(wire, "steer").success).toBe(true);
		await client.followUp("f1");
		expect(answer(wire, "follow_up").success).toBe(true);
		await idle;
		expect(userTexts(events)).toEqual(["hi", "s1", "f1"]);
		expect(ends(events, "assistant").map((e) => [e.message.stopReason, textOf(e.message)])).toEqual([
			["error", ""],
			["stop", "s1"],
			["stop", "f1"],
		]);
		expect(count(events, "agent_end")).toBe(1);
		expect(events.at(-1).type).toBe("agent_end");
	}, true);
}, 30000);

test("T5 abortAndPrompt during backoff cancels the retry and runs the new prompt", async () => {
	await withOmp([{ error: "503" }, { text: "the replacement's answer" }], { "retry.baseDelayMs": 30000 }, async ({ client, events, wire }) => {
		const backoff = next(client, "auto_retry_start");
		await client.prompt("second");
		await backoff;
		await client.abortAndPrompt("replacement");
		expect(answer(wire, "abort_and_prompt").success).toBe(true);
		await until(client, events, (ev) => count(ev, "agent_end") === 2);
		expect(events.find((e) => e.type === "auto_retry_end")).toEqual({
			type: "auto_retry_end", success: false, attempt: 1, finalError: "Retry cancelled",
		});
		expect(userTexts(events)).toEqual(["second", "replacement"]);
		const last = ends(events, "assistant").at(-1).message;
		expect([last.stopReason, textOf(last)]).toEqual(["stop", "the replacement's answer"]);
		expect(await client.getLastAssistantText()).toBe("the replacement's answer");
	}, true);
}, 30000);

test("T5 abortAndPrompt during a streaming attempt aborts it and runs the new prompt", async () => {
	await withOmp([{ hang: true }, { text: "after the abort" }], {}, async ({ client, events, wire }) => {
		const streaming = next(client, "message_start");
		await client.prompt("first");
		await streaming;
		await client.abortAndPrompt("replacement");
		expect(answer(wire, "abort_and_prompt").success).toBe(true);
		await until(client, events, (ev) => count(ev, "agent_end") === 2);
		expect(userTexts(events)).toEqual(["first", "replacement"]);
		expect(ends(events, "assistant").map((e) => e.message.stopReason)).toEqual(["aborted", "stop"]);
		expect(await client.getLastAssistantText()).toBe("after the abort");
	}, true);
}, 30000);

test("T5 abortAndPrompt when idle just runs the prompt", async () => {
	await withOmp([{ text: "idle answer" }], {}, async ({ client, events, wire }) => {
		const idle = client.waitForIdle(20000);
		await client.abortAndPrompt("hello");
		expect(answer(wire, "abort_and_prompt").success).toBe(true);
		await idle;
		expect(userTexts(events)).toEqual(["hello"]);
		expect(await client.getLastAssistantText()).toBe("idle answer");
	}, true);
}, 30000);

// --- oh-my-pi 18.3's lifecycle: prompt_result, session_settled, the event filter.

const frames = (wire: Ev[], type: string) => wire.filter((l) => l.type === type);
const idOf = (wire: Ev[], command: string) => answer(wire, command)?.id;

test183("18.3 promptAndWait returns on its own prompt_result after a three-attempt chain, with the last attempt's text", async () => {
	const plan = [{ error: "503 Service Unavailable" }, { error: "overloaded_error" }, { text: "the third attempt's text" }];
	await withOmp(plan, { "retry.baseDelayMs": 50 }, async ({ client, events, wire }) => {
		const agentEvents = await client.promptAndWait("hi", undefined, 20000);
		// Resolved by the frame: it is on the wire, after the chain's end and agent_end.
		const seen = wire.length;
		const id = idOf(wire, "prompt");
		const result = frames(wire, "prompt_result");
		expect(result).toHaveLength(1);
		expect(result[0]).toMatchObject({ id, status: "completed", agentInvoked: true });
		expect(result[0].error).toBeUndefined();
		const at = (type: string) => wire.findIndex((l) => l.type === type);
		expect(wire.findLastIndex((l) => l.type === "auto_retry_end")).toBeLessThan(at("agent_end"));
		expect(at("agent_end")).toBeLessThan(wire.indexOf(result[0]));
		expect(wire.indexOf(result[0])).toBeLessThan(seen);
		expect(events.filter((e) => e.type === "auto_retry_start").map((e) => e.attempt)).toEqual([1, 2]);
		expect(events.find((e) => e.type === "auto_retry_end")).toMatchObject({ success: true, attempt: 2 });
		expect(count(agentEvents, "agent_end")).toBe(1);
		expect(textOf(ends(agentEvents, "assistant").at(-1).message)).toBe("the third attempt's text");
		expect(await client.getLastAssistantText()).toBe("the third attempt's text");
	}, true);
}, 30000);

test183("18.3 a failed chain's prompt_result is status error with the verdict's retryable", async () => {
	await withOmp([{ error: "503" }, { error: "503" }], { "retry.baseDelayMs": 20, "retry.maxRetries": 1 }, async ({ client, wire }) => {
		await client.promptAndWait("hi", undefined, 20000);
		const [result] = frames(wire, "prompt_result");
		expect(result).toMatchObject({ id: idOf(wire, "prompt"), status: "error" });
		expect(result.error.message).toBe("503");
		expect(result.error.retryable).toBe(true);
	}, true);
}, 30000);

test183("18.3 waitForSettled returns only after the chain and the queued follow-up are done", async () => {
	const plan = [{ error: "503" }, { text: "first answer" }, { text: "follow-up answer" }];
	await withOmp(plan, { "retry.baseDelayMs": 400 }, async ({ client, events, wire }) => {
		expect((await client.getState()).isSettled).toBe(true);
		const backoff = next(client, "auto_retry_start");
		await client.prompt("hi");
		await backoff;
		await client.followUp("f1");
		const during = await client.getState();
		expect([during.isSettled, during.isRetrying]).toEqual([false, true]);
		await client.waitForSettled(20000);
		// Everything the run was to do is done by now, and said so once.
		expect(userTexts(events)).toEqual(["hi", "f1"]);
		expect(textOf(ends(events, "assistant").at(-1).message)).toBe("follow-up answer");
		expect(frames(wire, "session_settled")).toHaveLength(1);
		expect(wire.findIndex((l) => l.type === "session_settled")).toBeGreaterThan(wire.findLastIndex((l) => l.type === "agent_end"));
		expect(frames(wire, "prompt_result").map((r) => r.status)).toEqual(["completed"]);
		const after = await client.getState();
		expect([after.isSettled, after.isStreaming, after.hasPendingAsyncWork]).toEqual([true, false, false]);
		// Settled already: waitForSettled answers from get_state at once.
		const t0 = Date.now();
		await client.waitForSettled(5000);
		expect(Date.now() - t0).toBeLessThan(2000);
	}, true);
}, 30000);

test183("18.3 abortAndPrompt during a backoff: the first prompt's result is aborted, the new one completes", async () => {
	await withOmp([{ error: "503" }, { text: "the replacement's answer" }], { "retry.baseDelayMs": 30000 }, async ({ client, events, wire }) => {
		const backoff = next(client, "auto_retry_start");
		const firstId = await client.prompt("first");
		expect(firstId).toBe(idOf(wire, "prompt"));
		await backoff;
		const t0 = Date.now();
		await client.abortAndPrompt("replacement");
		await client.waitForSettled(20000);
		expect(Date.now() - t0).toBeLessThan(10000);
		const results = frames(wire, "prompt_result");
		expect(results.map((r) => [r.id, r.status])).toEqual([
			[firstId, "aborted"],
			[idOf(wire, "abort_and_prompt"), "completed"],
		]);
		expect(events.find((e) => e.type === "auto_retry_end")).toMatchObject({ success: false, finalError: "Retry cancelled" });
		expect(await client.getLastAssistantText()).toBe("the replacement's answer");
	}, true);
}, 30000);

test183("18.3 setEventFilter: only the listed session events come, prompt results still do; null brings all back", async () => {
	await withOmp([{ error: "503" }, { text: "filtered" }, { text: "unfiltered" }], { "retry.baseDelayMs": 50 }, async ({ client, events, wire }) => {
		const wanted = ["agent_end", "auto_retry_start", "auto_retry_end"];
		expect(await client.setEventFilter(wanted)).toEqual(wanted);
		await client.promptAndWait("one", undefined, 20000);
		expect([...new Set(events.map((e) => e.type))].sort()).toEqual([...wanted].sort());
		expect(frames(wire, "prompt_result")).toHaveLength(1);
		expect(await client.setEventFilter(null)).toBeNull();
		events.length = 0;
		await client.promptAndWait("two", undefined, 20000);
		expect(events.map((e) => e.type)).toContain("message_update");
		expect(await client.getLastAssistantText()).toBe("unfiltered");
	}, true);
}, 30000);

test183("18.3 message events carry a messageId, the same across one message's start, updates and end", async () => {
	await withOmp([{ error: "503" }, { text: "two words" }], { "retry.baseDelayMs": 20 }, async ({ client, wire }) => {
		await client.promptAndWait("hi", undefined, 20000);
		const msgs = wire.filter((l) => l.type?.startsWith("message_"));
		for (const l of msgs) expect(typeof l.messageId).toBe("string");
		// One id per message: the user's, the failed attempt's, the good one's.
		const ids = [...new Set(msgs.map((l) => l.messageId))];
		expect(ids).toHaveLength(3);
		for (const id of ids) {
			const kinds = msgs.filter((l) => l.messageId === id).map((l) => l.type);
			expect(kinds[0]).toBe("message_start");
			expect(kinds.at(-1)).toBe("message_end");
		}
	}, true);
}, 30000);
