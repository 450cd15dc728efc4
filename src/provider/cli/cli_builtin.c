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

static const char codex_json[] =
	"{\"type\": \"exec\","
	" \"argv\": [\"codex\", \"exec\", \"--json\", \"{prompt}\", \"{args}\"],"
	" \"resumeArgv\": [\"codex\", \"exec\", \"--json\", \"resume\", \"{sessionId}\", \"{prompt}\","
	"                 \"{args}\"],"
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
	/* exec --json drops will_retry: the text is all there is. */
	" \"retryNotice\": {\"type\": \"error\", \"match\": {\"message\":"
	"                 \"^Reconnecting\\\\.\\\\.\\\\.(?: (?<attempt>\\\\d+)/(?<maxAttempts>\\\\d+))?\"},"
	"                 \"message\": \"message\"},"
	" \"terminal\": [{\"type\": \"turn.completed\", \"inputTokens\": \"usage.input_tokens\","
	"               \"outputTokens\": \"usage.output_tokens\"},"
	"              {\"type\": \"turn.failed\", \"failed\": true, \"message\": \"error.message\"}]}";

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
	"\"\\\\S\"}, \"failed\": true, \"message\": \"error.message\", "
	"\"inputTokens\": \"stats.input\", \"outputTokens\": \"stats.output_tokens\", "
	"\"cacheReadTokens\": \"stats.cached\"}, {\"type\": \"error\", \"when\": "
	"{\"severity\": \"error\"}, \"failed\": true, \"message\": \"message\"}]}";

static const char pi_json[] =
	"{\"type\": \"exec\","
	" \"argv\": [\"pi\", \"-p\", \"--mode\", \"json\", \"{prompt}\", \"{args}\"],"
	" \"resumeArgv\": [\"pi\", \"-p\", \"--mode\", \"json\", \"--session\", \"{sessionId}\","
	"                 \"{prompt}\", \"{args}\"],"
	" \"modelArgs\": [\"--model\", \"{model}\"],"
	" \"sessionId\": {\"type\": \"session\", \"field\": \"id\"},"
	" \"text\": {\"type\": \"message_update\","
	"          \"when\": {\"assistantMessageEvent.type\": \"text_delta\"},"
	"          \"field\": \"assistantMessageEvent.delta\", \"delta\": true},"
	/* The signature is on the block in the partial message at thinking_end:
	 * the last thinking block there is the one ending. */
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
	{ "claude", claude_json },
	{ "codex", codex_json },
	{ "gemini", gemini_json },
	{ "pi", pi_json },
	{ NULL, NULL },
};
