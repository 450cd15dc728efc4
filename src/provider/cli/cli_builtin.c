/* cli_builtin — the built-in agent-CLI profiles as data: each in the form a
 * user writes under providers.NAME in settings (one string each, as ISO C
 * caps string literals at 4095 bytes). Formats: the CLIs' documented
 * stream-json / --json / json modes. */
#include "provider/cli/cli_builtin.h"

#include <stddef.h>

static const char claude_json[] =
	"{\"type\": \"exec\","
	" \"argv\": [\"claude\", \"-p\", \"{prompt}\", \"--output-format\", \"stream-json\","
	"           \"--verbose\", \"{args}\"],"
	" \"resumeArgv\": [\"claude\", \"-p\", \"--resume\", \"{sessionId}\", \"{prompt}\","
	"                 \"--output-format\", \"stream-json\", \"--verbose\", \"{args}\"],"
	" \"modelArgs\": [\"--model\", \"{model}\"],"
	" \"serverEnv\": [\"ANTHROPIC_BASE_URL\", \"ANTHROPIC_BEDROCK_BASE_URL\","
	"               \"ANTHROPIC_VERTEX_BASE_URL\"],"
	/* Claude Code 2.1.332 retries 10 times by itself (a 401 too, 184 s),
	 * 3 times on an overloaded_error, and answers a cut stream with a
	 * plain (non-streamed) resend; the retry watchdog retries a 429/529
	 * forever whatever the count says. 0 is the least it allows. */
	" \"ownRetriesOff\": {\"env\": {\"CLAUDE_CODE_MAX_RETRIES\": \"0\","
	"                   \"CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK\": \"1\","
	"                   \"CLAUDE_CODE_RETRY_WATCHDOG\": \"0\"}},"
	/* Set, --resume of an interrupted turn first re-runs that turn by
	 * itself: two answers, two result lines, in one run. */
	" \"env\": {\"CLAUDE_CODE_RESUME_INTERRUPTED_TURN\": null},"
	" \"setupErrors\": ["
	"  {\"match\": \"cannot be used with root/sudo privileges\", \"why\": \"Claude Code refuses"
	" --dangerously-skip-permissions (bypassPermissions) as root: run retryd as another user,"
	" set IS_SANDBOX=1 in providers.claude.env on a sandbox, or allow tools with --allowedTools"
	" or --permission-mode acceptEdits in providers.claude.args\"},"
	"  {\"match\": \"error: (unknown option|option '[^']*' argument)\", \"why\": \"claude rejected"
	" an option: fix providers.claude.args (or argv), or update Claude Code\"},"
	"  {\"match\": \"requires --verbose\", \"why\": \"claude -p with --output-format stream-json"
	" needs --verbose: keep it in providers.claude.argv and resumeArgv\"},"
	"  {\"match\": \"Settings file not found\", \"why\": \"the --settings file in"
	" providers.claude.args does not exist: fix the path\"},"
	"  {\"match\": \"Input must be provided either through stdin or as a prompt\", \"why\":"
	" \"claude got an empty prompt: send a prompt with text\"}],"
	/* Said on stderr (and in the result line's errors[]); exit 1, no request. */
	" \"resumeFailed\": \"No conversation found with session ID|--resume requires a valid session\","
	/* Every line carries session_id; the newest wins. */
	" \"sessionId\": {\"field\": \"session_id\"},"
	/* A synthetic assistant line (top-level "error") repeats the failure. */
	" \"text\": {\"type\": \"assistant\", \"when\": {\"error\": null}, \"each\": \"message.content\","
	"          \"where\": {\"type\": \"text\"}, \"field\": \"text\"},"
	" \"thinking\": {\"type\": \"assistant\", \"when\": {\"error\": null},"
	"              \"each\": \"message.content\", \"where\": {\"type\": \"thinking\"},"
	"              \"field\": \"thinking\", \"signature\": \"signature\"},"
	" \"toolStart\": {\"type\": \"assistant\", \"each\": \"message.content\","
	"               \"where\": {\"type\": \"tool_use\"}, \"id\": \"id\", \"name\": \"name\","
	"               \"args\": \"input\"},"
	" \"toolEnd\": {\"type\": \"user\", \"each\": \"message.content\","
	"             \"where\": {\"type\": \"tool_result\"}, \"id\": \"tool_use_id\","
	"             \"result\": \"content\", \"isError\": \"is_error\"},"
	" \"retryNotice\": {\"type\": \"system\", \"when\": {\"subtype\": \"api_retry\"},"
	"                 \"attempt\": \"attempt\", \"maxAttempts\": \"max_retries\","
	"                 \"delayMs\": \"retry_delay_ms\", \"status\": \"error_status\","
	"                 \"message\": \"error\"},"
	/* subtype "success" with is_error true is a failure. */
	" \"terminal\": {\"type\": \"result\", \"failed\": {\"is_error\": true},"
	"              \"message\": [\"result\", \"errors\", \"subtype\"], \"status\": \"api_error_status\","
	"              \"inputTokens\": \"usage.input_tokens\", \"outputTokens\": \"usage.output_tokens\","
	"              \"cacheReadTokens\": \"usage.cache_read_input_tokens\","
	"              \"cacheWriteTokens\": \"usage.cache_creation_input_tokens\"}}";

/* Codex 0.171 (docs/agent-clis/codex.md). The prompt goes on stdin ("-"):
 * in argv one that starts with "-" is taken for a flag ("-h ..." prints the
 * help and exits 0), and a replayed conversation can pass the kernel's
 * 128 KiB limit on one argument. --skip-git-repo-check: else nothing runs
 * outside a Git repository. `exec resume` takes no -s/-C/--add-dir, so
 * {args} must suit both argvs. */
/* The built-in "openai" provider of Codex as a provider of retryd's own
 * (retryd_openai), its retry counts 0; base is the base_url pair or "". */
#define OPENAI_MIRROR(base) \
	"\"-c\", \"model_providers.retryd_openai.name=\\\"OpenAI\\\"\", " base \
	"\"-c\", \"model_providers.retryd_openai.wire_api=\\\"responses\\\"\"," \
	"\"-c\", \"model_providers.retryd_openai.requires_openai_auth=true\"," \
	"\"-c\", \"model_providers.retryd_openai.env_http_headers={\\\"OpenAI-Organization\\\"=" \
	"\\\"OPENAI_ORGANIZATION\\\",\\\"OpenAI-Project\\\"=\\\"OPENAI_PROJECT\\\"}\"," \
	"\"-c\", \"model_providers.retryd_openai.request_max_retries=0\"," \
	"\"-c\", \"model_providers.retryd_openai.stream_max_retries=0\"," \
	"\"-c\", \"model_provider=\\\"retryd_openai\\\"\""

static const char codex_json[] =
	"{\"type\": \"exec\","
	" \"argv\": [\"codex\", \"exec\", \"--json\", \"--skip-git-repo-check\", \"{args}\", \"-\"],"
	" \"resumeArgv\": [\"codex\", \"exec\", \"--json\", \"resume\", \"--skip-git-repo-check\","
	"                 \"{args}\", \"--\", \"{sessionId}\", \"-\"],"
	" \"promptVia\": \"stdin\","
	" \"modelArgs\": [\"-m\", \"{model}\"],"
	" \"sessionId\": {\"type\": \"thread.started\", \"field\": \"thread_id\"},"
	" \"text\": {\"type\": \"item.completed\", \"when\": {\"item.type\": \"agent_message\"},"
	"          \"field\": \"item.text\"},"
	" \"thinking\": {\"type\": \"item.completed\", \"when\": {\"item.type\": \"reasoning\"},"
	"              \"field\": \"item.text\"},"
	" \"toolStart\": {\"type\": \"item.started\", \"when\": {\"item.type\": [\"command_execution\","
	"               \"file_change\", \"mcp_tool_call\", \"web_search\"]},"
	"               \"id\": \"item.id\", \"name\": \"item.type\", \"args\": \"item\"},"
	" \"toolEnd\": {\"type\": \"item.completed\", \"when\": {\"item.type\": [\"command_execution\","
	"             \"file_change\", \"mcp_tool_call\", \"web_search\"]},"
	"             \"id\": \"item.id\", \"name\": \"item.type\","
	"             \"result\": [\"item.aggregated_output\", \"item.changes\", \"item.result\"],"
	"             \"isError\": {\"item.status\": [\"failed\", \"declined\"]}},"
	/* exec --json drops will_retry: the text is all there is ("Reconnecting...
	 * n/5 (...)", "Reconnecting... waiting for network (...)"). Not the
	 * WebSocket handshakes of the built-in provider ("url: ws://..."): it
	 * falls back to HTTPS after them, so a 404 there is no failure. */
	" \"retryNotice\": {\"type\": \"error\", \"match\": {\"message\":"
	"                 \"^Reconnecting\\\\.\\\\.\\\\.(?: (?<attempt>\\\\d+)/(?<maxAttempts>\\\\d+))?"
	"(?!.*\\\\burl: wss?://)\"},"
	"                 \"message\": \"message\"},"
	" \"terminal\": [{\"type\": \"turn.completed\", \"inputTokens\": \"usage.input_tokens\","
	"               \"outputTokens\": \"usage.output_tokens\"},"
	"              {\"type\": \"turn.failed\", \"failed\": true, \"message\": \"error.message\"}],"
	" \"resumeFailed\": \"no rollout found for thread id\","
	" \"setupErrors\": ["
	"  {\"match\": \"Not inside a trusted directory and --skip-git-repo-check\","
	"   \"why\": \"Codex runs only inside a Git repository unless its argv has"
	" --skip-git-repo-check: keep it in providers.codex.argv and resumeArgv, or run retryd in a"
	" Git repository\"},"
	"  {\"match\": \"(?m)^error: (unexpected argument|unrecognized subcommand|invalid value|"
	"a value is required|the argument)\","
	"   \"why\": \"Codex rejected an argument of providers.codex.args (they go to both"
	" `codex exec` and `codex exec resume`, which takes no -s, -C or --add-dir: use -c"
	" sandbox_mode=... instead)\"},"
	/* retryd's retry counts for a model_provider without a table make one
	 * without a name: Codex then says this instead of "not found". */
	"  {\"match\": \"Error loading config\\\\.toml: model_providers\\\\.[^:]*: provider name must"
	" not be empty\","
	"   \"why\": \"Codex's model_provider names no [model_providers.ID] table (with a name) of"
	" its config.toml: define it, or fix model_provider\"},"
	"  {\"match\": \"Error loading config\\\\.toml\","
	"   \"why\": \"Codex could not load its configuration: a value in ~/.codex/config.toml or"
	" in a -c of providers.codex.args is wrong (`codex exec -` in this folder says which)\"},"
	"  {\"match\": \"Model provider `[^`]*` not found\","
	"   \"why\": \"Codex's model_provider names no [model_providers.ID] table of its"
	" config.toml: define it, or fix model_provider\"}]}";

/* providers.codex.ownRetriesOff, apart for its length. */
static const char codex_quiet_json[] =
	/* Bounded connection retries instead of "waiting for network" forever. */
	"{\"args\": [\"-c\", \"features.unbounded_connection_retries=false\"],"
	/* Codex takes its retry counts per named provider only, and refuses
	 * them for its built-in ones. The provider the user's config.toml or
	 * args choose (the top-level model_provider) is named; the built-in
	 * "openai" (no model_provider) is run as a provider of retryd's own with
	 * the same name, URL (openai_base_url or the built-in's), auth and
	 * headers, so that its counts can be set: HTTPS only, no WebSocket.
	 * Not with a config profile, which may choose a provider of its own. */
	"                    \"configArgs\": ["
	"                     {\"files\": [\"{env:CODEX_HOME}/config.toml\", \"{home}/.codex/config.toml\"],"
	"                      \"match\": \"(?m)\\\\A[^\\\\[]*?^[ \\\\t]*model_provider[ \\\\t]*=[ \\\\t]*"
	"[\\\"']?(?<value>[A-Za-z0-9_.-]+)\","
	"                      \"skip\": \"^(?:openai|oss|ollama|lmstudio)$\","
	"                      \"args\": [\"-c\", \"model_providers.{value}.request_max_retries=0\","
	"                               \"-c\", \"model_providers.{value}.stream_max_retries=0\"]},"
	"                     {\"files\": [\"{env:CODEX_HOME}/config.toml\", \"{home}/.codex/config.toml\"],"
	"                      \"unless\": \"(?m)\\\\A[^\\\\[]*?^[ \\\\t]*(?:model_provider[ \\\\t]*=[ \\\\t]*"
	"[\\\"']?(?!openai(?![A-Za-z0-9_.-]))[A-Za-z0-9_.-]|profile[ \\\\t]*=)|^(?:-p|--profile)(?:=.*)?$\","
	"                      \"match\": \"(?m)\\\\A[^\\\\[]*?^[ \\\\t]*openai_base_url[ \\\\t]*=[ \\\\t]*"
	"[\\\"']?(?<value>[^\\\"'\\\\s]+)\","
	"                      \"args\": [" OPENAI_MIRROR("\"-c\", \"model_providers.retryd_openai.base_url=\\\"{value}\\\"\",") "],"
	"                      \"otherwise\": [" OPENAI_MIRROR("") "]}]}";

static const char gemini_json[] =
	"{\"type\": \"exec\","
	/* --prompt=: a prompt that starts with "-" is the option's value, not an
	 * option. --skip-trust: a headless run in an untrusted folder exits 55. */
	" \"argv\": [\"gemini\", \"--prompt={prompt}\", \"--output-format\", "
	"\"stream-json\", \"--skip-trust\", \"{args}\"],"
	" \"resumeArgv\": [\"gemini\", \"--resume\", \"{sessionId}\", "
	"\"--prompt={prompt}\", \"--output-format\", \"stream-json\", "
	"\"--skip-trust\", \"{args}\"],"
	" \"modelArgs\": [\"-m\", \"{model}\"],"
	/* Gemini CLI reads general.maxAttempts only from a settings file, and a
	 * system settings file must be root's: so the user-level one, in a private
	 * GEMINI_CLI_HOME. One attempt (none of its 10, nor its mid-stream re-stream
	 * that repeats the answer unmarked); a model, so that the "auto" router's
	 * call (5 attempts of its own) is not made; the api-key auth type, which a
	 * base URL turns into one 0.61 rejects; no usage statistics (the one other
	 * host it contacts), no update check. */
	" \"ownRetriesOff\": {\"env\": {\"GEMINI_CLI_HOME\": \"{retrydDir}\"}, "
	"\"files\": {\".gemini/settings.json\": "
	"\"{\\\"general\\\":{\\\"maxAttempts\\\":1,\\\"enableAutoUpdate\\\":false,\\\"e"
	"nableAutoUpdateNotification\\\":false},\\\"model\\\":{\\\"name\\\":\\\"pro\\\""
	"},\\\"security\\\":{\\\"auth\\\":{\\\"selectedType\\\":\\\"gemini-api-key\\\"}"
	"},\\\"privacy\\\":{\\\"usageStatisticsEnabled\\\":false},\\\"telemetry\\\":{\\"
	"\"enabled\\\":false}}\"}},"
	/* After an API error the saved session drops the failed user turn (not
	 * after a tool ran in that run, nor after a kill); a failed first turn
	 * leaves no session to resume. */
	" \"lostTurnOnError\": true,"
	" \"serverEnv\": [\"GOOGLE_GEMINI_BASE_URL\", \"GOOGLE_VERTEX_BASE_URL\"],"
	" \"resumeFailed\": \"Error resuming session: \","
	" \"setupErrors\": [{\"match\": \"Unknown arguments?: \", \"why\": \"Gemini "
	"CLI rejected an argument in providers.gemini.args (retryd passes --prompt, "
	"--output-format, --skip-trust, --resume and -m itself): see `gemini "
	"--help`\"}, {\"match\": \"not running in a trusted directory\", \"why\": "
	"\"Gemini CLI does not trust this directory: keep --skip-trust in the argv, or "
	"set GEMINI_CLI_TRUST_WORKSPACE=true\"}, {\"match\": \"Invalid auth method "
	"selected\", \"why\": \"Gemini CLI 0.61 rejects the auth type it infers from "
	"GOOGLE_GEMINI_BASE_URL: set security.auth.selectedType to "
	"\\\"gemini-api-key\\\" in ~/.gemini/settings.json (retryd's own settings do, "
	"unless keepOwnRetries is true)\"}, {\"match\": \"you must specify the "
	"GEMINI_API_KEY|Please set an Auth method|When using Vertex AI, you must\", "
	"\"why\": \"Gemini CLI has no credentials: set GEMINI_API_KEY (retryd runs it "
	"in a private GEMINI_CLI_HOME, where a `gemini` login is not seen; set "
	"providers.gemini.keepOwnRetries to true to use ~/.gemini)\"}, {\"match\": "
	"\"Invalid custom base URL\", \"why\": \"GOOGLE_GEMINI_BASE_URL is not a URL: "
	"give the gateway's full URL, e.g. https://gateway.example\"}, {\"match\": "
	"\"Error in \\\\S*settings\\\\.json|enforced authentication type|auth type "
	"'\", \"why\": \"Gemini CLI refused its settings (the file and the reason are "
	"in the message): fix that settings.json\"}],"
	" \"sessionId\": {\"type\": \"init\", \"field\": \"session_id\"},"
	" \"text\": {\"type\": \"message\", \"when\": {\"role\": \"assistant\"}, "
	"\"field\": \"content\", \"delta\": true},"
	" \"toolStart\": {\"type\": \"tool_use\", \"id\": \"tool_id\", \"name\": "
	"\"tool_name\", \"args\": \"parameters\"},"
	" \"toolEnd\": {\"type\": \"tool_result\", \"id\": \"tool_id\", \"result\": "
	"[\"output\", \"error.message\"], \"isError\": {\"status\": \"error\"}},"
	/* Only where one attempt is not the CLI's last (keepOwnRetries, the "auto"
	 * router, gemini-3-flash-preview's own policy): console.warn on stderr. */
	" \"retryNotice\": [{\"stream\": \"stderr\", \"match\": \"^Attempt "
	"(?<attempt>\\\\d+) failed(?: with status (?<status>\\\\d+)| with [^.]*)?\\\\. "
	"Retrying with backoff\\\\.\\\\.\\\\.\\\\s*(?<message>.*)\"}, {\"stream\": "
	"\"stderr\", \"match\": \"^(?:Attempt (?<attempt>\\\\d+) failed: "
	")?(?<message>.*?)\\\\.? Retrying after "
	"(?<delayMs>\\\\d+)ms\\\\.\\\\.\\\\.$\"}],"
	/* A cut or early-ended stream: an error line with the reason, then a
	 * result line with status "error" and no message, which no rule takes. */
	" \"terminal\": [{\"type\": \"result\", \"when\": {\"status\": \"success\"}, "
	"\"failed\": false, \"inputTokens\": \"stats.input\", \"outputTokens\": "
	"\"stats.output_tokens\", \"cacheReadTokens\": \"stats.cached\"}, {\"type\": "
	"\"result\", \"when\": {\"status\": \"error\"}, \"match\": {\"error.message\": "
	"\"\\\\S\"}, \"failed\": true, \"message\": \"error.message\", \"errorType\": \"error.type\", "
	"\"inputTokens\": \"stats.input\", \"outputTokens\": \"stats.output_tokens\", "
	"\"cacheReadTokens\": \"stats.cached\"}, {\"type\": \"error\", \"when\": "
	"{\"severity\": \"error\"}, \"failed\": true, \"message\": \"message\"}]}";

static const char pi_json[] =
	"{\"type\": \"exec\","
	/* The prompt goes on stdin: pi's argv parser takes a leading "-" for an
	 * option and a leading "@" for a file to include, even after "--". */
	" \"argv\": [\"pi\", \"-p\", \"--mode\", \"json\", \"{args}\"],"
	" \"resumeArgv\": [\"pi\", \"-p\", \"--mode\", \"json\", \"--session\", \"{sessionId}\","
	"                 \"{args}\"],"
	" \"promptVia\": \"stdin\","
	" \"modelArgs\": [\"--model\", \"{model}\"],"
	" \"env\": {\"PI_SKIP_VERSION_CHECK\": \"1\"},"
	/* pi has no flag or variable for its settings, and a private agent dir
	 * would hide the user's models.json and auth.json: an extension ends a
	 * run whose last answer failed before pi retries it (4 requests, 14 s
	 * per run otherwise) or compacts and retries an overflow. */
	" \"ownRetriesOff\": {\"args\": [\"-e\", \"{retrydDir}/pi-no-retry.mjs\"],"
	"                   \"files\": {\"pi-no-retry.mjs\": \"export default p=>p.on('agent_end',"
	"(e,c)=>{const a=e.messages.filter(m=>m.role==='assistant').pop();"
	"if(a&&a.stopReason==='error')c.abort()})\"}},"
	" \"resumeFailed\": \"(?m)^No session found matching '\","
	" \"setupErrors\": ["
	"  {\"match\": \"Model \\\"[^\\\"]*\\\" not found|Unknown provider \\\"\","
	"   \"why\": \"pi does not know this model or provider: use one that `pi --list-models`"
	" shows, or add it to ~/.pi/agent/models.json\"},"
	"  {\"match\": \"No API key found for\","
	"   \"why\": \"pi has no API key for the model's provider: set its key variable (e.g."
	" OPENAI_API_KEY), an apiKey in ~/.pi/agent/models.json, or run `pi auth login`\"},"
	"  {\"match\": \"Unknown option: |cannot be combined with|File not found: \","
	"   \"why\": \"pi rejected an argument in providers.pi.args (retryd passes -p, --mode,"
	" --session and --model itself): see `pi --help`\"},"
	"  {\"match\": \"Failed to load extension\","
	"   \"why\": \"pi could not load an extension (providers.pi.args or"
	" ~/.pi/agent/settings.json): fix or remove it\"},"
	"  {\"match\": \"(?m)^Node\\\\.js v(?:1?[0-9]|2[01]|22\\\\.(?:[0-9]|1[0-8]))\\\\.\","
	"   \"why\": \"pi needs Node.js 22.19 or newer and an older node is first on retryd's"
	" PATH: put a newer node first\"}],"
	" \"sessionId\": {\"type\": \"session\", \"field\": \"id\"},"
	" \"text\": {\"type\": \"message_update\","
	"          \"when\": {\"assistantMessageEvent.type\": \"text_delta\"},"
	"          \"field\": \"assistantMessageEvent.delta\", \"delta\": true},"
	/* pi 1.6 drops the partial message from message_update lines: this
	 * signature rule finds nothing there (the signature is in message_end). */
	" \"thinking\": [{\"type\": \"message_update\","
	"               \"when\": {\"assistantMessageEvent.type\": \"thinking_delta\"},"
	"               \"field\": \"assistantMessageEvent.delta\", \"delta\": true},"
	"              {\"type\": \"message_update\","
	"               \"when\": {\"assistantMessageEvent.type\": \"thinking_end\"},"
	"               \"each\": \"message.content\", \"where\": {\"type\": \"thinking\"},"
	"               \"signature\": \"thinkingSignature\"}],"
	" \"toolStart\": {\"type\": \"tool_execution_start\", \"id\": \"toolCallId\","
	"               \"name\": \"toolName\", \"args\": \"args\"},"
	" \"toolEnd\": {\"type\": \"tool_execution_end\", \"id\": \"toolCallId\", \"name\": \"toolName\","
	"             \"result\": \"result\", \"isError\": \"isError\"},"
	/* Only with keepOwnRetries: pi's own retry of the whole request. */
	" \"retryNotice\": {\"type\": \"auto_retry_start\", \"attempt\": \"attempt\","
	"                 \"maxAttempts\": \"maxAttempts\", \"delayMs\": \"delayMs\","
	"                 \"message\": \"errorMessage\"},"
	/* No result line, and exit 0 on failure: the last assistant message_end
	 * decides (a later one replaces an earlier one). */
	" \"terminal\": {\"type\": \"message_end\", \"when\": {\"message.role\": \"assistant\"},"
	"              \"failed\": {\"message.stopReason\": [\"error\", \"aborted\"]},"
	"              \"message\": [\"message.errorMessage\", \"message.stopReason\"],"
	"              \"inputTokens\": \"message.usage.input\","
	"              \"outputTokens\": \"message.usage.output\","
	"              \"cacheReadTokens\": \"message.usage.cacheRead\","
	"              \"cacheWriteTokens\": \"message.usage.cacheWrite\"}}";

const struct cli_builtin cli_builtin_table[] = {
	{ "claude", claude_json, NULL },
	{ "codex", codex_json, codex_quiet_json },
	{ "gemini", gemini_json, NULL },
	{ "pi", pi_json, NULL },
	{ NULL, NULL, NULL },
};
