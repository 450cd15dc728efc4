#include "proto/message.h"

#include <string.h>

#include "base/number.h"

json_t *message_user(const char *text, const json_t *images, int64_t timestamp_ms)
{
	json_t *content = json_pack("[{s:s, s:s}]", "type", "text", "text", text);
	size_t i;
	json_t *img;

	if (content == NULL)
		return NULL;
	json_array_foreach(images, i, img)
		json_array_append(content, (json_t *)img);
	return json_pack("{s:s, s:o, s:I}", "role", "user", "content", content,
			 "timestamp", (json_int_t)timestamp_ms);
}

/* A usage count (a loaded session file may hold anything): 0 unless a
 * whole number >= 0, at most NUMBER_MAX. */
static int64_t count(const json_t *usage, const char *key)
{
	int64_t n;

	return number_from_json(json_object_get(usage, key), &n) > 0 ? n : 0;
}

json_t *message_stats(const json_t *messages, const char *session_id, const char *session_file)
{
	size_t i, user = 0, assistant = 0;
	int64_t in = 0, out = 0, cache_read = 0, cache_write = 0;
	json_t *m;
	json_t *st;

	json_array_foreach(messages, i, m) {
		const char *role = json_string_value(json_object_get(m, "role"));
		json_t *usage = json_object_get(m, "usage");

		if (role != NULL && strcmp(role, "user") == 0)
			user++;
		else if (role != NULL && strcmp(role, "assistant") == 0)
			assistant++;
		in = number_add(in, count(usage, "input"));
		out = number_add(out, count(usage, "output"));
		cache_read = number_add(cache_read, count(usage, "cacheRead"));
		cache_write = number_add(cache_write, count(usage, "cacheWrite"));
	}
	/* pi's total is the sum of the four sums, not of the messages'
	 * totalTokens. */
	st = json_pack("{s:s, s:I, s:I, s:i, s:i, s:I, s:{s:I, s:I, s:I, s:I, s:I}, s:f}",
		       "sessionId", session_id, "userMessages", (json_int_t)user,
		       "assistantMessages", (json_int_t)assistant, "toolCalls", 0, "toolResults", 0,
		       "totalMessages", (json_int_t)json_array_size(messages),
		       "tokens", "input", (json_int_t)in, "output", (json_int_t)out,
		       "cacheRead", (json_int_t)cache_read, "cacheWrite", (json_int_t)cache_write,
		       "total", (json_int_t)number_add(number_add(in, out),
						       number_add(cache_read, cache_write)),
		       "cost", 0.0);
	if (st != NULL && session_file != NULL)
		json_object_set_new(st, "sessionFile", json_string(session_file));
	return st;
}
