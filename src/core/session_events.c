/* session_events — messageId stamping and the event filter (session_events.h). */
#include "core/session_events.h"

#include <stdio.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/log.h"

enum pass {
	PASS_FILTERED, /* retryd sends it; a filter may leave it out */
	PASS_ALWAYS,   /* a lifecycle frame or an answer: never filtered */
	PASS_NEVER,    /* an oh-my-pi session event retryd never sends */
};

/* Every event type a filter may name. The filtered ones' order is their
 * bit. A start that names its `partner` is a lifecycle guarantee: a client
 * that sees a run or a retry chain begin waits for its end, so a filter
 * that keeps the start keeps the end. An end alone is a whole fact
 * (agent_end is what a client waits on), and a message's or a turn's
 * pieces may be picked freely, as oh-my-pi lets them be. */
static const struct {
	const char *name;
	enum pass pass;
	const char *partner;
} types[] = {
	{ "agent_start", PASS_FILTERED, "agent_end" },
	{ "agent_end", PASS_FILTERED, NULL },
	{ "turn_start", PASS_FILTERED, NULL },
	{ "turn_end", PASS_FILTERED, NULL },
	{ "message_start", PASS_FILTERED, NULL },
	{ "message_update", PASS_FILTERED, NULL },
	{ "message_end", PASS_FILTERED, NULL },
	{ "auto_retry_start", PASS_FILTERED, "auto_retry_end" },
	{ "auto_retry_end", PASS_FILTERED, NULL },
	{ "retry_fallback_applied", PASS_FILTERED, NULL },
	{ "fleet_wait", PASS_FILTERED, NULL },
	{ "notice", PASS_FILTERED, NULL },
	{ "thinking_level_changed", PASS_FILTERED, NULL },
	/* An agent CLI's (provider/cli). */
	{ "provider_retry", PASS_FILTERED, NULL },
	{ "tool_execution_start", PASS_FILTERED, NULL },
	{ "tool_execution_end", PASS_FILTERED, NULL },
	{ "prompt_result", PASS_ALWAYS, NULL },
	{ "agent_settled", PASS_ALWAYS, NULL },
	{ "session_settled", PASS_ALWAYS, NULL },
	{ "response", PASS_ALWAYS, NULL },
	{ "ready", PASS_ALWAYS, NULL },
	/* oh-my-pi's RpcClient lists these among its session events; a filter
	 * it sends may name them, and nothing of them ever comes. */
	{ "tool_execution_update", PASS_NEVER, NULL },
	{ "tool_stream_update", PASS_NEVER, NULL },
	{ "auto_compaction_start", PASS_NEVER, NULL },
	{ "auto_compaction_end", PASS_NEVER, NULL },
	{ "retry_fallback_succeeded", PASS_NEVER, NULL },
	{ "ttsr_triggered", PASS_NEVER, NULL },
	{ "todo_reminder", PASS_NEVER, NULL },
	{ "todo_auto_clear", PASS_NEVER, NULL },
	{ "irc_message", PASS_NEVER, NULL },
	{ "model_changed", PASS_NEVER, NULL },
	{ "goal_updated", PASS_NEVER, NULL },
};

#define TYPE_COUNT (sizeof(types) / sizeof(types[0]))

static int type_index(const char *name)
{
	for (size_t i = 0; i < TYPE_COUNT; i++)
		if (strcmp(types[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Levenshtein distance, capped: names are short and a typo is close. */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64], prev, tmp;

	if (la >= sizeof(row) / sizeof(row[0]) || lb >= sizeof(row) / sizeof(row[0]))
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t best = prev + (a[i - 1] != b[j - 1]);

			tmp = row[j];
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

/* A name retryd does not know: a typo of one it knows (a did-you-mean),
 * else another program's event that never comes here, accepted as
 * oh-my-pi accepts any name (its own list grows with each release). */
static int unknown_type(const char *name, char *err, size_t errlen)
{
	const char *near = NULL;
	size_t best = 3;

	for (size_t i = 0; i < TYPE_COUNT; i++) {
		size_t d = distance(name, types[i].name);

		if (d < best) {
			best = d;
			near = types[i].name;
		}
	}
	if (near == NULL)
		return 0;
	return errbuf_set(err, errlen, "set_event_filter: unknown event type \"%.80s\" "
			  "(did you mean \"%s\"?)", name, near);
}

/* The selection as oh-my-pi returns it: each name once, in first order. */
static json_t *selection(const json_t *events)
{
	json_t *out = json_array(), *seen = json_object(), *v;
	size_t i;

	if (out == NULL || seen == NULL)
		goto fail;
	json_array_foreach(events, i, v) {
		const char *name = json_string_value(v);

		if (json_object_get(seen, name) != NULL)
			continue;
		if (json_object_set(seen, name, json_true()) != 0 ||
		    json_array_append(out, v) != 0)
			goto fail;
	}
	json_decref(seen);
	return out;
fail:
	json_decref(out);
	json_decref(seen);
	return NULL;
}

int session_events_set_filter(struct session_events *self, const json_t *events,
			      json_t **active, char *err, size_t errlen)
{
	uint64_t bits = 0;
	size_t i;
	json_t *v;

	*active = NULL;
	if (json_is_null(events)) {
		self->filtering = false;
		self->filter = 0;
		*active = json_null();
		return 0;
	}
	/* oh-my-pi's sentence, for oh-my-pi's check. */
	if (!json_is_array(events))
		return errbuf_set(err, errlen, "events must be null or an array of non-empty event "
				  "type strings");
	json_array_foreach(events, i, v) {
		int t;

		if (!json_is_string(v) || json_string_length(v) == 0)
			return errbuf_set(err, errlen, "events must be null or an array of non-empty "
					  "event type strings (events[%zu] is not)", i);
		t = type_index(json_string_value(v));
		if (t < 0 && unknown_type(json_string_value(v), err, errlen) != 0)
			return -1;
		if (t >= 0 && types[t].pass == PASS_FILTERED)
			bits |= (uint64_t)1 << t;
	}
	for (size_t t = 0; t < TYPE_COUNT; t++) {
		int p;

		if (types[t].partner == NULL || !(bits & ((uint64_t)1 << t)))
			continue;
		p = type_index(types[t].partner);
		if (!(bits & ((uint64_t)1 << p)))
			return errbuf_set(err, errlen, "set_event_filter: \"%s\" without \"%s\" would "
					  "show a %s start but never its end; name both, or the end alone",
					  types[t].name, types[p].name,
					  strncmp(types[t].name, "auto_retry", 10) == 0 ? "retry chain"
					  : "run");
	}
	*active = selection(events);
	if (*active == NULL)
		return errbuf_set(err, errlen, "set_event_filter: out of memory");
	self->filter = bits;
	self->filtering = true;
	return 0;
}

static bool passes(const struct session_events *self, const char *type)
{
	int t;

	if (!self->filtering || type == NULL)
		return true;
	t = type_index(type);
	if (t < 0 || types[t].pass != PASS_FILTERED)
		return true;
	return (self->filter & ((uint64_t)1 << t)) != 0;
}

static uint64_t mint(struct session_events *self)
{
	uint64_t id = ++self->minted;

	/* Full: the outermost open message gives way, so the newest start and
	 * its end still pair (an outer end then gets an id of its own). */
	if (self->open_count == SESSION_EVENTS_OPEN_MAX) {
		memmove(self->open, self->open + 1, (SESSION_EVENTS_OPEN_MAX - 1) * sizeof(self->open[0]));
		self->open_count--;
	}
	self->open[self->open_count++] = id;
	return id;
}

/* The id of the message an update belongs to: the innermost open one. */
static uint64_t current(struct session_events *self)
{
	return self->open_count > 0 ? self->open[self->open_count - 1] : mint(self);
}

static uint64_t close_one(struct session_events *self)
{
	if (self->open_count == 0)
		return ++self->minted;
	return self->open[--self->open_count];
}

/* oh-my-pi's form: "msg-<n>", n counting from 1 per process. */
static void format_id(uint64_t id, char *out, size_t outlen)
{
	snprintf(out, outlen, "msg-%llu", (unsigned long long)id);
}

void session_events_emit(struct session_events *self, json_t *event)
{
	const char *type = json_string_value(json_object_get(event, "type"));
	uint64_t id = 0;
	char text[32];

	if (type != NULL && strcmp(type, "message_start") == 0)
		id = mint(self);
	else if (type != NULL && strcmp(type, "message_update") == 0)
		id = current(self);
	else if (type != NULL && strcmp(type, "message_end") == 0)
		id = close_one(self);
	else if (type != NULL && strcmp(type, "agent_end") == 0)
		self->open_count = 0; /* a run leaves no message open */
	if (id != 0) {
		format_id(id, text, sizeof(text));
		json_object_set_new(event, "messageId", json_string(text));
	}
	if (!passes(self, type)) {
		json_decref(event);
		return;
	}
	self->next.emit(self->next.ctx, event);
}

static void out_emit(void *ctx, json_t *event)
{
	session_events_emit(ctx, event);
}

/* The fast delta line (a message_update) is written straight into the
 * output buffer; a filter without message_update gets no buffer, as if the
 * output were gone, and the message still grows. */
static struct jsontext_buf *out_line_buf(void *ctx)
{
	struct session_events *self = ctx;
	struct jsontext_buf *b;

	if (!passes(self, "message_update"))
		return NULL;
	b = self->next.line_buf(self->next.ctx);
	self->line = b;
	self->line_mark = b != NULL ? b->len : 0;
	return b;
}

/* The line ends in "}\n": the id goes in before the closing brace, where
 * jansson would put a key set last. */
static void out_line_done(void *ctx)
{
	struct session_events *self = ctx;
	struct jsontext_buf *b = self->line;
	char id[32], field[64];
	int n;

	self->line = NULL;
	format_id(current(self), id, sizeof(id));
	n = snprintf(field, sizeof(field), ",\"messageId\":\"%s\"}\n", id);
	if (b != NULL && b->len >= self->line_mark + 2 && n > 0 &&
	    jsontext_reserve(b, (size_t)n) == 0) {
		memcpy(b->data + b->len - 2, field, (size_t)n);
		b->len += (size_t)n - 2;
	} else if (b != NULL) {
		LOG_ERROR("out of memory stamping a message id");
	}
	self->next.line_done(self->next.ctx);
}

struct assistant_output session_events_output(struct session_events *self)
{
	struct assistant_output out = { .emit = out_emit, .ctx = self };

	if (self->next.line_buf != NULL && self->next.line_done != NULL) {
		out.line_buf = out_line_buf;
		out.line_done = out_line_done;
	}
	return out;
}

void session_events_init(struct session_events *self, const struct assistant_output *next)
{
	memset(self, 0, sizeof(*self));
	self->next = *next;
}

void session_events_release(struct session_events *self)
{
	memset(self, 0, sizeof(*self));
}
