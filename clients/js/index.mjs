// retryd for JavaScript: start the daemon, speak its protocol (pi's RPC
// protocol: one JSON object per line on stdin/stdout), no dependencies.
// Types: index.d.ts. Usage: README.md.
import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const PKG_ROOT = dirname(fileURLToPath(import.meta.url));
const STDERR_TAIL = 8192;

/** The daemon refused a command (`success:false`), or is gone, or took too long. */
export class RetrydError extends Error {
	constructor(message, { command, exitCode, stderr } = {}) {
		super(message);
		this.name = "RetrydError";
		this.command = command;
		this.exitCode = exitCode;
		this.stderr = stderr;
	}
}

function executable(path) {
	try {
		accessSync(path, constants.X_OK);
		return true;
	} catch {
		return false;
	}
}

/**
 * The retryd executable: $RETRYD if set; else the retryd that `make install`
 * put beside this package (<prefix>/bin/retryd for
 * <prefix>/lib/node_modules/retryd); else one in a directory of `dirs`; else
 * `retryd` on PATH. Returns null when there is none.
 */
export function findDaemon(env = process.env, dirs = []) {
	if (env.RETRYD) return env.RETRYD;
	const beside = resolve(PKG_ROOT, "..", "..", "..", "bin", "retryd");
	if (executable(beside)) return beside;
	for (const dir of [...dirs, ...(env.PATH ?? "").split(delimiter)]) {
		if (dir && executable(join(dir, "retryd"))) return join(dir, "retryd");
	}
	return null;
}

/**
 * Splits a byte stream into lines at "\n" only. Framing on bytes, before
 * decoding, keeps U+2028/U+2029 (legal inside a JSON string) and a UTF-8
 * character cut across two chunks intact; a long line costs one concat.
 */
export class LineFramer {
	#parts = [];

	/** Feeds one chunk; returns the complete lines it ended, decoded, "\r\n" tolerated. */
	push(chunk) {
		const lines = [];
		let start = 0;
		for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
			this.#parts.push(chunk.subarray(start, nl));
			const line = this.#parts.length === 1 ? this.#parts[0] : Buffer.concat(this.#parts);
			this.#parts = [];
			const end = line.length > 0 && line[line.length - 1] === 13 ? line.length - 1 : line.length;
			lines.push(line.toString("utf8", 0, end));
			start = nl + 1;
		}
		if (start < chunk.length) this.#parts.push(chunk.subarray(start));
		return lines;
	}
}

/**
 * Whether e ends the run of the prompt with promptId: its own prompt_result;
 * or agent_end from a daemon that sends no prompt_result (one that does
 * marks its agent_end with willRetry, pi 1.6's field that came with them).
 */
function runEnded(e, promptId) {
	if (e.type === "prompt_result") return e.id === promptId;
	return e.type === "agent_end" && !("willRetry" in e);
}

/** How a prompt's run ended, from its events (the same fields as the Python client's Result). */
function summarize(events, promptId) {
	let message = null, retries = 0, finalError = null, cancelled = false, messages = [];
	let promptResult = null;
	for (const e of events) {
		if (e.type === "message_end" && e.message?.role === "assistant") message = e.message;
		else if (e.type === "auto_retry_start") retries++;
		else if (e.type === "auto_retry_end") {
			finalError = e.success === false ? (e.finalError ?? null) : null;
			cancelled ||= e.finalError === "Retry cancelled";
		} else if (e.type === "agent_end" && Array.isArray(e.messages)) messages = e.messages;
		else if (e.type === "prompt_result" && promptId != null && e.id === promptId) promptResult = e;
	}
	const stopReason = message?.stopReason ?? null;
	const status = promptResult?.status ?? null;
	const perr = promptResult?.error ?? null;
	// The daemon's word when it sends one: prompt_result's status.
	const success = status !== null ? status === "completed" : ["stop", "length", "toolUse"].includes(stopReason);
	const text = message ? textOf(message) : null;
	const errorMessage = message?.errorMessage ?? null;
	// A cancelled backoff says so rather than repeating the failure before it.
	const error = success ? null
		: finalError === "Retry cancelled" ? finalError
		: (perr?.message ?? finalError ?? errorMessage ?? (status === "aborted" ? "aborted" : "the run ended without an answer"));
	return { success, status, text, stopReason, errorMessage, error,
		retryable: perr?.retryable ?? null, httpStatus: perr?.httpStatus ?? null,
		provider: perr?.provider ?? null, model: perr?.model ?? null, retries,
		cancelled: cancelled || status === "aborted" || stopReason === "aborted",
		message, messages, promptResult, events };
}

/** The text blocks of a message, joined. */
export function textOf(message) {
	const c = message?.content;
	if (typeof c === "string") return c;
	return (c ?? []).filter((b) => b.type === "text").map((b) => b.text).join("");
}

export class RetrydClient {
	#opts;
	#child = null;
	#exited = null;
	#exit = null; // { code, signal } once the daemon is gone
	#nextId = 0;
	#pending = new Map(); // id -> { resolve, reject }
	#listeners = new Set();
	#stderr = "";

	/**
	 * bin: the daemon (default: findDaemon()); args: its arguments ("--mode rpc"
	 * is not needed); env: added to process.env; cwd; stderr: "pipe" (kept, its
	 * tail quoted in errors) or "inherit".
	 */
	constructor({ bin, args = [], env = {}, cwd, stderr = "pipe" } = {}) {
		this.#opts = { bin, args, env, cwd, stderr };
	}

	/** Spawns the daemon and waits for its {"type":"ready"} line. */
	async start({ timeoutMs = 10000 } = {}) {
		if (this.#child) throw new RetrydError("retryd: the client is already started");
		const bin = this.#opts.bin ?? findDaemon({ ...process.env, ...this.#opts.env });
		if (!bin) {
			throw new RetrydError("retryd: no retryd executable found (pass bin, set RETRYD, or put retryd on PATH)");
		}
		const child = spawn(bin, this.#opts.args, {
			cwd: this.#opts.cwd,
			env: { ...process.env, ...this.#opts.env },
			stdio: ["pipe", "pipe", this.#opts.stderr === "inherit" ? "inherit" : "pipe"],
		});
		this.#child = child;
		this.#exit = null;
		this.#stderr = "";
		const framer = new LineFramer();
		child.stdout.on("data", (chunk) => {
			for (const line of framer.push(chunk)) this.#onLine(line);
		});
		child.stderr?.on("data", (chunk) => {
			this.#stderr = (this.#stderr + chunk.toString("utf8")).slice(-STDERR_TAIL);
		});
		child.stdin.on("error", () => {}); // EPIPE after the daemon exited: the exit handler reports it
		this.#exited = new Promise((done) => {
			let spawnError = null;
			child.on("error", (err) => { spawnError = err; });
			child.on("close", (code, signal) => {
				this.#exit = { code, signal };
				const why = spawnError
					? `retryd: cannot run ${bin}: ${spawnError.message}`
					: `retryd exited (${signal ?? `status ${code}`})${this.#stderr ? `: ${this.#stderr.trim()}` : ""}`;
				const err = new RetrydError(why, { exitCode: code, stderr: this.#stderr });
				for (const p of this.#pending.values()) p.reject(err);
				this.#pending.clear();
				for (const l of this.#listeners) l({ type: "exit", code, signal, error: why });
				done(code);
			});
		});
		const ready = new Promise((ok) => {
			const off = this.onEvent((e) => {
				if (e.type === "ready" || e.type === "exit") { off(); ok(e); }
			});
		});
		const first = await withTimeout(ready, timeoutMs, "retryd: no ready line", () => {
			child.kill("SIGKILL");
			this.#child = null;
		});
		if (first.type === "exit") {
			this.#child = null;
			throw new RetrydError(first.error, { exitCode: first.code, stderr: this.#stderr });
		}
	}

	#onLine(line) {
		if (line === "") return;
		let msg;
		try {
			msg = JSON.parse(line);
		} catch {
			msg = { type: "parse_error", line };
		}
		if (msg?.type === "response" && msg.id != null && this.#pending.has(msg.id)) {
			const p = this.#pending.get(msg.id);
			this.#pending.delete(msg.id);
			if (msg.success) p.resolve(msg.data);
			else p.reject(new RetrydError(`${msg.command}: ${msg.error}`, { command: msg.command }));
			return;
		}
		for (const l of this.#listeners) l(msg);
	}

	/** Calls listener(event) for every line that is not an awaited response; returns the unsubscribe. */
	onEvent(listener) {
		this.#listeners.add(listener);
		return () => this.#listeners.delete(listener);
	}

	/**
	 * The events from now on, as an async iterator; it ends when the daemon
	 * exits, or when the loop breaks. Nothing is dropped while the loop is busy.
	 */
	events() {
		const queue = [];
		let wake = null, done = false;
		const off = this.onEvent((e) => {
			if (e.type === "exit") done = true;
			else queue.push(e);
			wake?.();
		});
		if (this.#exit || !this.#child) done = true;
		const finish = () => { off(); done = true; return { done: true, value: undefined }; };
		return {
			[Symbol.asyncIterator]() { return this; },
			async next() {
				while (queue.length === 0 && !done) await new Promise((r) => { wake = r; });
				wake = null;
				return queue.length > 0 ? { done: false, value: queue.shift() } : finish();
			},
			async return() { return finish(); },
		};
	}

	/** Sends one command (an id is added) and resolves with its response's data. */
	request(command, { timeoutMs = 30000, id = `js-${++this.#nextId}` } = {}) {
		if (!this.#child || this.#exit) {
			return Promise.reject(new RetrydError("retryd: the client is not running", { command: command.type }));
		}
		const answer = new Promise((resolve, reject) => this.#pending.set(id, { resolve, reject }));
		this.#child.stdin.write(`${JSON.stringify({ ...command, id })}\n`);
		return withTimeout(answer, timeoutMs, `${command.type}: no response`, () => this.#pending.delete(id));
	}

	/** Starts a run; resolves once the daemon has taken it (not when it ends). */
	prompt(message, { images, streamingBehavior, retry, id } = {}) {
		return this.request({ type: "prompt", message, images, streamingBehavior, retry }, { id });
	}

	/**
	 * Runs a prompt to its end: its own prompt_result, which the daemon sends
	 * after the whole retry chain and the run (from a daemon without
	 * prompt_result: the run's agent_end). Resolves with { success, status,
	 * text, stopReason, errorMessage, error, retryable, httpStatus, provider,
	 * model, retries, cancelled, message, messages, promptResult, events }.
	 */
	async promptAndWait(message, { timeoutMs = 600000, ...promptOpts } = {}) {
		const events = [];
		const id = `js-${++this.#nextId}`;
		let off, done = false;
		const ended = new Promise((resolve, reject) => {
			off = this.onEvent((e) => {
				if (e.type === "exit") return reject(new RetrydError(e.error, { exitCode: e.code, stderr: this.#stderr }));
				// The run's own events: what follows its prompt_result
				// (agent_settled, session_settled) is left to onEvent listeners.
				if (done) return;
				events.push(e);
				if (runEnded(e, id)) {
					done = true;
					resolve();
				}
			});
		});
		ended.catch(() => {}); // a failed prompt is the error to report, not this
		try {
			await this.prompt(message, { ...promptOpts, id });
			await withTimeout(ended, timeoutMs, "prompt: the run did not end");
		} finally {
			off();
		}
		return summarize(events, id);
	}

	/**
	 * Resolves once the session is settled: nothing runs, waits (a backoff,
	 * a fleet hold) or is queued. At once when get_state says isSettled,
	 * else at the next session_settled (listened for before asking, so one
	 * in between is not missed); rejects after timeoutMs.
	 */
	async waitForSettled({ timeoutMs = 600000 } = {}) {
		let off;
		const settled = new Promise((resolve, reject) => {
			off = this.onEvent((e) => {
				if (e.type === "session_settled") resolve();
				else if (e.type === "exit") reject(new RetrydError(e.error, { exitCode: e.code, stderr: this.#stderr }));
			});
		});
		settled.catch(() => {});
		try {
			if ((await this.getState()).isSettled === true) return;
			await withTimeout(settled, timeoutMs, "waitForSettled: no session_settled");
		} finally {
			off();
		}
	}

	abort() { return this.request({ type: "abort" }); }
	abortRetry() { return this.request({ type: "abort_retry" }); }
	/** persist:false (retryd only) applies to this daemon alone; the default writes the settings file, as pi does. */
	setAutoRetry(enabled, { persist } = {}) { return this.request({ type: "set_auto_retry", enabled, persist }); }
	getState() { return this.request({ type: "get_state" }); }
	async getMessages() { return (await this.request({ type: "get_messages" })).messages; }
	async getLastAssistantText() { return (await this.request({ type: "get_last_assistant_text" })).text; }

	/** The daemon's last 8 KiB of stderr (with stderr:"pipe"). */
	get stderr() { return this.#stderr; }

	/**
	 * Stops the daemon: SIGTERM (it cancels what runs, as abort does), then
	 * SIGKILL after killAfterMs. Resolves with its exit status.
	 */
	async stop({ killAfterMs = 3000 } = {}) {
		const child = this.#child;
		if (!child) return null;
		if (!this.#exit) {
			child.stdin.end();
			child.kill("SIGTERM");
			const timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
			await this.#exited;
			clearTimeout(timer);
		}
		this.#child = null;
		return this.#exit.code;
	}
}

function withTimeout(promise, ms, what, onTimeout) {
	let timer;
	const late = new Promise((_, reject) => {
		timer = setTimeout(() => { onTimeout?.(); reject(new RetrydError(`${what} within ${ms} ms`)); }, ms);
	});
	return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
