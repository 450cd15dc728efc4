// Types for index.mjs (written by hand; the package has no build step).

/** One line from the daemon: an event (`agent_start`, `message_end`, `auto_retry_start`, ...),
 * a response nobody awaits, `{type:"parse_error", line}` for a line that is not JSON, or the
 * client's own `{type:"exit", code, signal, error}` when the daemon is gone (retryd never sends
 * "exit"; `error` is a sentence saying why, with the tail of its stderr). */
export interface RetrydEvent {
	type: string;
	[key: string]: unknown;
}

export interface RetrydMessage {
	role: "user" | "assistant" | string;
	content: string | Array<{ type: string; text?: string; [key: string]: unknown }>;
	stopReason?: "stop" | "length" | "toolUse" | "error" | "aborted" | string;
	errorMessage?: string;
	[key: string]: unknown;
}

export interface ImageContent {
	type: "image";
	data: string;
	mimeType: string;
}

export interface PromptOptions {
	images?: ImageContent[];
	/** "steer" or "followUp": how a prompt sent while a run is going is queued. */
	streamingBehavior?: "steer" | "followUp";
	/** Retry settings for this prompt only (retryd), e.g. `{ maxRetries: 5 }`. */
	retry?: Record<string, unknown>;
	/** The command's id (default: the client's next one); its prompt_result carries it. */
	id?: string;
}

/** oh-my-pi's prompt_result frame: once per accepted prompt, after its run. */
export interface PromptResult {
	type: "prompt_result";
	id?: string;
	agentInvoked: boolean;
	status: "completed" | "aborted" | "error";
	error?: { message: string; provider?: string; model?: string; httpStatus?: number; retryable: boolean };
	sessionSettled: boolean;
}

/** How a prompt's run ended. */
export interface RunResult {
	/** prompt_result's status is "completed" (from a daemon without prompt_result: the final
	 * assistant message's stopReason is "stop", "length" or "toolUse"). */
	success: boolean;
	/** prompt_result's status; null from a daemon without prompt_result. */
	status: "completed" | "aborted" | "error" | null;
	/** That message's text (null when there was none). */
	text: string | null;
	stopReason: string | null;
	errorMessage: string | null;
	/** null on success; else "Retry cancelled" for a cancelled backoff, else prompt_result's
	 * error.message, else the retry chain's finalError, else errorMessage. */
	error: string | null;
	/** From prompt_result's error (null when absent): whether resubmitting later may succeed. */
	retryable: boolean | null;
	httpStatus: number | null;
	provider: string | null;
	model: string | null;
	/** How many auto_retry_start events the run had. */
	retries: number;
	/** Aborted, or the retry chain ended "Retry cancelled". */
	cancelled: boolean;
	message: RetrydMessage | null;
	/** agent_end's messages. */
	messages: RetrydMessage[];
	/** The prompt's own prompt_result, or null. */
	promptResult: PromptResult | null;
	/** Every event of the run, in order, up to and including its prompt_result (or agent_end). */
	events: RetrydEvent[];
}

export interface RetrydState {
	isStreaming: boolean;
	isRetrying: boolean;
	retryAttempt: number;
	autoRetryEnabled: boolean;
	messageCount: number;
	pendingMessageCount: number;
	sessionId: string;
	/** Nothing runs, waits or is queued (oh-my-pi's predicate). */
	isSettled: boolean;
	hasPendingAsyncWork: boolean;
	[key: string]: unknown;
}

export interface RetrydClientOptions {
	/** The daemon; default findDaemon(). */
	bin?: string;
	/** Its arguments, e.g. ["--provider", "openai", "--model", "gpt-4o-mini"]. */
	args?: string[];
	/** Added to process.env. */
	env?: Record<string, string>;
	cwd?: string;
	/** "pipe" (default): kept, its last 8 KiB quoted in errors; "inherit": shown. */
	stderr?: "pipe" | "inherit";
}

/** The daemon refused a command (`success:false`), or is gone, or did not answer in time. */
export class RetrydError extends Error {
	/** The refused command's type, when the daemon refused one. */
	command?: string;
	exitCode?: number | null;
	stderr?: string;
}

/** $RETRYD; else <prefix>/bin/retryd beside <prefix>/lib/node_modules/retryd; else retryd in one of
 * `dirs`; else retryd on PATH; else null. */
export function findDaemon(env?: Record<string, string | undefined>, dirs?: string[]): string | null;

/** Splits bytes into lines at "\n" only (never at U+2028/U+2029), one trailing "\r" dropped. */
export class LineFramer {
	push(chunk: Buffer): string[];
}

/** The text blocks of a message, joined. */
export function textOf(message: RetrydMessage): string;

export class RetrydClient {
	constructor(options?: RetrydClientOptions);
	/** Spawns the daemon and waits for its ready line. */
	start(options?: { timeoutMs?: number }): Promise<void>;
	/** Every event (see RetrydEvent); returns the unsubscribe. */
	onEvent(listener: (event: RetrydEvent) => void): () => void;
	/** The events from now on; ends when the daemon exits or the loop breaks. */
	events(): AsyncIterableIterator<RetrydEvent>;
	/** Any command; an id is added; resolves with the response's data. */
	request<T = any>(command: { type: string; [key: string]: unknown }, options?: { timeoutMs?: number; id?: string }): Promise<T>;
	/** Resolves once the daemon has taken the prompt, not when its run ends. */
	prompt(message: string, options?: PromptOptions): Promise<void>;
	/** Runs a prompt to its prompt_result (after the whole retry chain; from an older daemon,
	 * agent_end). timeoutMs default 600000. */
	promptAndWait(message: string, options?: PromptOptions & { timeoutMs?: number }): Promise<RunResult>;
	/** Resolves once nothing runs, waits or is queued: at once when get_state says isSettled,
	 * else at the next session_settled. timeoutMs default 600000. */
	waitForSettled(options?: { timeoutMs?: number }): Promise<void>;
	abort(): Promise<{ discardedMessages: string[] }>;
	/** Cancels a pending backoff; no effect otherwise. */
	abortRetry(): Promise<void>;
	/** persist: false applies to this daemon only; by default the settings file is written (as pi does). */
	setAutoRetry(enabled: boolean, options?: { persist?: boolean }): Promise<{ persisted?: boolean; warning?: string } | undefined>;
	getState(): Promise<RetrydState>;
	getMessages(): Promise<RetrydMessage[]>;
	getLastAssistantText(): Promise<string | null>;
	/** The daemon's last 8 KiB of stderr (with stderr: "pipe"). */
	readonly stderr: string;
	/** SIGTERM (cancels what runs), SIGKILL after killAfterMs (3000); resolves with the exit status. */
	stop(options?: { killAfterMs?: number }): Promise<number | null>;
}
