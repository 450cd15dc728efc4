#include "core/classify.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "base/errtext.h"
#include "base/hint.h"
#include "core/classify_body.h"
#include "core/classify_patterns.h"
#include "core/classify_table.h"

/* A stated wait this long is an hourly, daily or plan window, not a rate
 * limit: per-minute windows state at most 60 s, and a token bucket's time to
 * full refill reads a few minutes (OpenAI's documented
 * x-ratelimit-reset-tokens: 6m0s). */
#define LONG_WAIT_MS INT64_C(900000)

/* Headers whose value (up to the first ':') is an exception name. */
static const char typed_headers[][20] = { "x-amzn-errortype", ":exception-type", "x-error-type" };

/* --- statuses --- */

static bool is_retry_status(int s)
{
	return s == 408 || s == 409 || s == 425 || s == 429 ||
	       (s >= 500 && s <= 599 && s != 501 && s != 505);
}

static bool is_never_status(int s)
{
	return s == 401 || s == 403 || s == 404 || s == 405 || s == 407 || s == 410;
}

static bool is_bad_status(int s)
{
	return s == 400 || s == 406 || (s >= 411 && s <= 412) || (s >= 415 && s <= 417) ||
	       s == 421 || s == 422 || s == 428 || s == 431 || s == 501 || s == 505;
}

static bool is_413(int s) { return s == 413; }
static bool is_402(int s) { return s == 402; }

/* --- the classifier --- */

struct classify {
	int refs;
	struct classify_patterns pat;	/* the built-in and settings patterns */
	/* The normalised text: the daemon classifies on a single thread. */
	char *text;
};

json_t *classify_defaults(void)
{
	json_t *obj = json_object();

	if (obj == NULL)
		return NULL;
	for (size_t l = 0; l < U_COUNT; l++)
		if (json_object_set_new(obj, classify_user_keys[l], json_array()) != 0)
			goto fail;
	return obj;
fail:
	json_decref(obj);
	return NULL;
}

struct classify *classify_new(const json_t *retry, char *err, size_t errlen)
{
	struct classify *self;

	if (retry != NULL && !json_is_object(retry)) {
		errbuf_set(err, errlen, "retry must be an object");
		return NULL;
	}
	self = calloc(1, sizeof(*self));
	if (self == NULL) {
		errbuf_set(err, errlen, "retry: out of memory");
		return NULL;
	}
	self->refs = 1;
	if (classify_patterns_init(&self->pat, retry, err, errlen) != 0)
		goto fail;
	self->text = malloc(ERRTEXT_MAX);
	if (self->text == NULL) {
		errbuf_set(err, errlen, "retry: out of memory");
		goto fail;
	}
	return self;
fail:
	classify_free(self);
	return NULL;
}

struct classify *classify_ref(struct classify *self)
{
	if (self != NULL)
		self->refs++;
	return self;
}

void classify_free(struct classify *self)
{
	if (self == NULL || --self->refs > 0)
		return;
	classify_patterns_fini(&self->pat);
	free(self->text);
	free(self);
}

/* --- one decision --- */

/* What the text, status and headers say, gathered before the table runs. */
struct facts {
	const char *hay;
	size_t len;
	/* Distinct statuses 400-599 in the order found, or the caller's. */
	int statuses[200];
	size_t nstatus;
	/* The first typed value of each class, NULL none, and when it came. */
	const struct classify_typed *typed[RULE_CLASSES];
	size_t typed_seq[RULE_CLASSES];
	size_t seq;
	int64_t hint;		/* the headers' wait, else the text's */
	int64_t text_hint;	/* the text's (and body's) own, -1 none */
	bool provider_retry;	/* a RETRY or OVERLOAD value not a library's name */
	struct google_status google;	/* the body as a google.rpc.Status */
	unsigned char *memo;	/* classify_patterns_row's, CLASSIFY_MEMO_SIZE */
};

static int match_at(const struct classify *self, const pcre2_code *code, const struct facts *f,
		    size_t start)
{
	return classify_patterns_match(&self->pat, code, f->hay, f->len, start);
}

static int first_match(const struct classify *self, const struct classify_list *list,
		       const struct facts *f)
{
	return classify_patterns_first(&self->pat, list, f->hay, f->len, f->memo);
}

static void add_status(struct facts *f, int s)
{
	for (size_t k = 0; k < f->nstatus; k++)
		if (f->statuses[k] == s)
			return;
	if (f->nstatus < sizeof(f->statuses) / sizeof(f->statuses[0]))
		f->statuses[f->nstatus++] = s;
}

static void find_statuses(const struct classify *self, int status, struct facts *f)
{
	const struct classify_list *list = &self->pat.builtin[LIST_statusPatterns];
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(self->pat.match);

	/* A caller's failure status is the status; a 2xx (an error inside a
	 * stream) says nothing, so the text is read. */
	if (status >= 400 && status <= 599) {
		f->statuses[f->nstatus++] = status;
		return;
	}
	for (size_t i = 0; i < list->count; i++) {
		size_t start = 0;
		int groups;

		while (start <= f->len && (groups = match_at(self, list->codes[i], f, start)) >= 0) {
			/* The status is the first group that took part: a pattern
			 * with alternatives has one group per alternative. */
			for (int g = 1; g < groups; g++) {
				const char *d;
				int v;

				/* An unset group's offset is no offset: not even added. */
				if (ov[2 * g] == PCRE2_UNSET || ov[2 * g + 1] - ov[2 * g] != 3)
					continue;
				d = f->hay + ov[2 * g];
				v = (d[0] - '0') * 100 + (d[1] - '0') * 10 + (d[2] - '0');
				if (v >= 400 && v <= 599)
					add_status(f, v);
				break;
			}
			start = classify_patterns_next(&self->pat, f->hay, f->len);
		}
	}
}

static bool has_status(const struct facts *f, int s)
{
	for (size_t k = 0; k < f->nstatus; k++)
		if (f->statuses[k] == s)
			return true;
	return false;
}

static void add_typed(struct facts *f, const char *value, size_t n)
{
	const struct classify_typed *row = classify_typed_find(value, n);

	if (row == NULL)
		return;
	f->provider_retry |= (row->cls == RULE_RETRY || row->cls == RULE_OVERLOAD) &&
			     !(row->flags & RULE_NAME);
	if (f->typed[row->cls] == NULL) {
		f->typed[row->cls] = row;
		f->typed_seq[row->cls] = f->seq;
	}
	f->seq++;
}

/* Header values first, then every key/value, then every exception name. */
static void find_typed(const struct classify *self, const json_t *headers, struct facts *f)
{
	const struct classify_list *list = &self->pat.builtin[LIST_typedPatterns];
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(self->pat.match);
	const char *key;
	json_t *v;

	if (json_is_object(headers)) {
		json_object_foreach((json_t *)headers, key, v) {
			const char *s = json_string_value(v);
			size_t n;

			if (s == NULL)
				continue;
			for (size_t h = 0; h < sizeof(typed_headers) / sizeof(typed_headers[0]); h++) {
				if (!classify_ascii_ieq(key, strlen(key), typed_headers[h]))
					continue;
				for (n = 0; n < json_string_length(v) && s[n] != ':'; n++)
					;
				add_typed(f, s, n);
			}
		}
	}
	for (size_t i = 0; i < list->count; i++) {
		size_t start = 0;

		while (start <= f->len && match_at(self, list->codes[i], f, start) >= 0) {
			add_typed(f, f->hay + ov[2], ov[3] - ov[2]);
			start = classify_patterns_next(&self->pat, f->hay, f->len);
		}
	}
}

/* The first match of settings list u: rule "settings:<key>[i]". */
static bool user_rule(const struct classify *self, const struct facts *f, enum classify_user_id u,
		      char *rule, size_t size)
{
	int i = first_match(self, &self->pat.user[u], f);

	if (i >= 0)
		snprintf(rule, size, "settings:%s[%d]", classify_user_keys[u], i);
	return i >= 0;
}

/* The first match of built-in list l among the rows whose flags, masked
 * with mask, are want (mask 0: every row): rule "text:<list>[i]". */
static bool text_rule_if(const struct classify *self, const struct facts *f,
			 enum classify_list_id l, unsigned mask, unsigned want, char *rule,
			 size_t size)
{
	const struct classify_list *list = &self->pat.builtin[l];

	for (size_t i = 0; i < list->count; i++) {
		if ((list->rows[i]->flags & mask) == want &&
		    classify_patterns_row(&self->pat, list, i, f->hay, f->len, f->memo)) {
			snprintf(rule, size, "%s", list->rows[i]->rule);
			return true;
		}
	}
	return false;
}
#define text_rule(self, f, l, rule, size) text_rule_if(self, f, l, 0, 0, rule, size)

/* The first status that pred holds for: rule "http-status:<n>". */
static bool status_rule(const struct facts *f, bool (*pred)(int), char *rule, size_t size)
{
	for (size_t k = 0; k < f->nstatus; k++) {
		if (pred(f->statuses[k])) {
			snprintf(rule, size, "http-status:%d", f->statuses[k]);
			return true;
		}
	}
	return false;
}

/* The first typed value of class a or b: rule "<family>:<value>". */
static bool typed_rule(const struct facts *f, enum rule_class a, enum rule_class b, char *rule,
		       size_t size)
{
	const struct classify_typed *ta = f->typed[a], *tb = f->typed[b], *t;

	t = ta == NULL || (tb != NULL && f->typed_seq[b] < f->typed_seq[a]) ? tb : ta;
	if (t != NULL)
		snprintf(rule, size, "%s", t->rule);
	return t != NULL;
}

/* The server said when to come back, and nothing else speaks against it:
 * "Please try again in 20s" alone is worth the wait (a client's own
 * countdown is no hint; nor are rate-limit headers, sent with every answer). */
static bool stated_wait(const struct facts *f, char *rule, size_t size)
{
	return f->text_hint >= 0 && snprintf(rule, size, "stated-wait") > 0;
}

/* Where step 4's evidence came from. */
enum retry_evidence {
	EV_NONE,
	EV_LIMIT,	/* a rate or quota window: a user's list, 429, WINDOW, a wait */
	EV_SERVER,	/* a broken or busy server, a gateway, the transport */
};

/* The model or a shared pool is saturated (classify.h: `overload`). */
static bool overloaded(const struct classify *self, const struct facts *f)
{
	return has_status(f, 529) || f->typed[RULE_OVERLOAD] != NULL ||
	       first_match(self, &self->pat.builtin[LIST_overloadPatterns], f) >= 0 ||
	       first_match(self, &self->pat.user[U_OVERLOAD], f) >= 0;
}

/* Step 4's verdict from its evidence and rule: retried, unless a rate or
 * quota window states a wait of 15 min or more (a spent quota; a server down
 * for maintenance is not, its long wait meets retry.maxDelayMs instead). */
static void retry_verdict(const struct facts *f, enum retry_evidence ev, bool overload,
			  const char *retry, struct classify_result *out)
{
	if (ev == EV_LIMIT && f->hint >= LONG_WAIT_MS) {
		out->verdict = CLASSIFY_USAGE_LIMIT;
		out->overload = false;
		snprintf(out->rule, sizeof(out->rule), "long-wait>=%lldms:%.70s", (long long)LONG_WAIT_MS,
			 retry);
		return;
	}
	out->verdict = CLASSIFY_RETRYABLE;
	out->overload = overload;
	snprintf(out->rule, sizeof(out->rule), "%s", retry);
}

/* A user's list of steps 2-4 matches: the settings speak before the typed
 * body does. */
static bool user_speaks(const struct classify *self, const struct facts *f)
{
	static const enum classify_user_id lists[] = { U_USAGE_LIMIT, U_NON_RETRYABLE, U_RETRYABLE,
					      U_OVERLOAD };

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		if (first_match(self, &self->pat.user[lists[i]], f) >= 0)
			return true;
	return false;
}

/* Step 1b (classify.h): a google.rpc.Status body's ErrorInfo reason, then
 * its QuotaFailure's window. */
static bool google_limits(const struct classify *self, const struct facts *f,
			  struct classify_result *out)
{
	const struct google_status *g = &f->google;
	const struct classify_typed *row;
	char rule[sizeof(out->rule)];

	if (!g->found || user_speaks(self, f))
		return false;
	row = g->reason[0] != '\0' ? classify_google_reason(g->reason) : NULL;
	if (row != NULL && (row->cls == RULE_NEVER || row->cls == RULE_USAGE)) {
		out->verdict = row->cls == RULE_NEVER ? CLASSIFY_NOT_RETRYABLE : CLASSIFY_USAGE_LIMIT;
		snprintf(out->rule, sizeof(out->rule), "%s", row->rule);
		return true;
	}
	switch (g->scope) {
	case GOOGLE_SCOPE_ZERO:
	case GOOGLE_SCOPE_DAY:
		out->verdict = CLASSIFY_USAGE_LIMIT;
		snprintf(out->rule, sizeof(out->rule), "google-quota%s:%.70s",
			 g->scope == GOOGLE_SCOPE_ZERO ? "-zero" : "", g->quota);
		return true;
	case GOOGLE_SCOPE_MINUTE:
		/* A quota of zero in the words: the tier has none (step 2). */
		if (first_match(self, &self->pat.builtin[LIST_limitZeroPatterns], f) >= 0)
			return false;
		snprintf(rule, sizeof(rule), "google-quota:%.70s", g->quota);
		retry_verdict(f, EV_LIMIT, false, rule, out);
		return true;
	case GOOGLE_SCOPE_NONE:
		break;
	}
	return false;
}

/* Step 2b: the body's error.status, once a spent quota's words have had
 * their say. */
static bool google_status_rule(const struct classify *self, const struct facts *f,
			       struct classify_result *out)
{
	const struct google_status *g = &f->google;
	const struct classify_typed *row;

	if (!g->found || g->status[0] == '\0' || user_speaks(self, f))
		return false;
	row = classify_google_status(g->status);
	if (row != NULL && row->cls == RULE_NEVER) {
		out->verdict = CLASSIFY_NOT_RETRYABLE;
		snprintf(out->rule, sizeof(out->rule), "%s", row->rule);
		return true;
	}
	if (row == NULL || row->cls != RULE_RETRY)
		return false;
	retry_verdict(f, row->flags & RULE_WINDOW ? EV_LIMIT : EV_SERVER, overloaded(self, f),
		      row->rule, out);
	return true;
}

static void decide(const struct classify *self, const struct facts *f,
		   struct classify_result *out)
{
	char *rule = out->rule;
	const size_t size = sizeof(out->rule);
	char bad[sizeof(out->rule)] = "", retry[sizeof(out->rule)] = "";
	enum retry_evidence ev = EV_NONE;
	bool overload, typed_retry, transport, minute, final, strong;

	out->overload = false;
	/* 1. context overflow */
	out->verdict = CLASSIFY_CONTEXT_OVERFLOW;
	if (user_rule(self, f, U_CONTEXT_OVERFLOW, rule, size) || status_rule(f, is_413, rule, size) ||
	    typed_rule(f, RULE_OVERFLOW, RULE_OVERFLOW, rule, size) ||
	    text_rule(self, f, LIST_contextOverflowPatterns, rule, size))
		return;
	/* 1b. Google's typed body: the key refused, the quota's window */
	if (google_limits(self, f, out))
		return;
	/* 2. spent quota, credit, billing. Gemini and DashScope send OpenAI's quota
	 * sentence (DashScope its insufficient_quota too: WINDOW rows) for per-minute
	 * windows as well: those count only when no minute window is named and no
	 * short wait is asked for ("Please retry in 37.5s"). */
	minute = first_match(self, &self->pat.builtin[LIST_perMinutePatterns], f) >= 0 ||
		 (f->text_hint >= 0 && f->text_hint < LONG_WAIT_MS);
	out->verdict = CLASSIFY_USAGE_LIMIT;
	if (user_rule(self, f, U_USAGE_LIMIT, rule, size) || status_rule(f, is_402, rule, size) ||
	    (!(minute && f->typed[RULE_USAGE] != NULL && (f->typed[RULE_USAGE]->flags & RULE_WINDOW)) &&
	     typed_rule(f, RULE_USAGE, RULE_USAGE, rule, size)) ||
	    text_rule(self, f, LIST_limitZeroPatterns, rule, size) ||
	    text_rule(self, f, LIST_usageLimitPatterns, rule, size) ||
	    (!minute && text_rule(self, f, LIST_quotaWordPatterns, rule, size)))
		return;
	/* 2b. Google's typed body: error.status */
	if (google_status_rule(self, f, out))
		return;
	/* 3. never retried. Typed retry evidence or a transport failure beats the
	 * weaker wordings (WEAK rows), not authentication or certificates. */
	out->verdict = CLASSIFY_NOT_RETRYABLE;
	typed_retry = status_rule(f, is_retry_status, retry, sizeof(retry)) || f->provider_retry;
	transport = first_match(self, &self->pat.builtin[LIST_transportPatterns], f) >= 0;
	if (user_rule(self, f, U_NON_RETRYABLE, rule, size) ||
	    status_rule(f, is_never_status, rule, size) ||
	    typed_rule(f, RULE_NEVER, RULE_NEVER, rule, size) ||
	    text_rule_if(self, f, LIST_nonRetryablePatterns, typed_retry || transport ? RULE_WEAK : 0,
			 0, rule, size))
		return;
	/* 4. retried. A generic bad request does not beat a 429 or "capacity"
	 * next to it; it only mutes the transient wordings. So does a server's
	 * "retrying won't help" (and the overload words), a plan word the bare
	 * generic ones only (WEAK: "unavailable", "busy", "retry"). */
	if (!status_rule(f, is_bad_status, bad, sizeof(bad)) &&
	    !typed_rule(f, RULE_BAD, RULE_BAD, bad, sizeof(bad)))
		(void)text_rule(self, f, LIST_badRequestPatterns, bad, sizeof(bad));
	overload = overloaded(self, f);
	strong = text_rule_if(self, f, LIST_noRetryPatterns, RULE_WEAK, 0, retry, sizeof(retry));
	final = strong || first_match(self, &self->pat.builtin[LIST_noRetryPatterns], f) >= 0;
	if (user_rule(self, f, U_RETRYABLE, retry, sizeof(retry)) ||
	    user_rule(self, f, U_OVERLOAD, retry, sizeof(retry)))
		ev = EV_LIMIT;
	else if (status_rule(f, is_retry_status, retry, sizeof(retry)))
		ev = has_status(f, 429) ? EV_LIMIT : EV_SERVER;
	else if (typed_rule(f, RULE_RETRY, RULE_OVERLOAD, retry, sizeof(retry)))
		ev = f->typed[RULE_RETRY] != NULL && (f->typed[RULE_RETRY]->flags & RULE_WINDOW)
			     ? EV_LIMIT : EV_SERVER;
	else if (text_rule_if(self, f, LIST_rateLimitPatterns, RULE_WINDOW, RULE_WINDOW, retry,
			      sizeof(retry)))
		ev = EV_LIMIT;
	else if (text_rule(self, f, LIST_rateLimitPatterns, retry, sizeof(retry)) ||
		 text_rule(self, f, LIST_gatewayPatterns, retry, sizeof(retry)) ||
		 (bad[0] == '\0' && !strong && text_rule_if(self, f, LIST_transientPatterns,
							     final ? RULE_WEAK : 0, 0, retry, sizeof(retry))))
		ev = EV_SERVER;
	else if (bad[0] == '\0' && stated_wait(f, retry, sizeof(retry)))
		ev = EV_LIMIT;
	else if (!strong && overload && text_rule(self, f, LIST_overloadPatterns, retry, sizeof(retry)))
		ev = EV_SERVER;
	if (ev != EV_NONE) {
		retry_verdict(f, ev, overload, retry, out);
		return;
	}
	/* 5. final: a bad request, a "retrying won't help", a plan word that muted
	 * a transient word (alone it says nothing), a generic permanent word no
	 * step knew ("not found"); anything else is not known either way */
	out->verdict = CLASSIFY_NOT_RETRYABLE;
	final = !strong && final &&
		text_rule_if(self, f, LIST_transientPatterns, RULE_WEAK, RULE_WEAK, rule, size);
	if (bad[0] != '\0') {
		memcpy(rule, bad, sizeof(bad));
	} else if (!text_rule_if(self, f, LIST_noRetryPatterns, final ? 0 : RULE_WEAK, 0, rule, size) &&
		   !text_rule(self, f, LIST_genericNeverPatterns, rule, size)) {
		out->verdict = CLASSIFY_UNKNOWN;
		snprintf(rule, size, "default");
	}
}

void classify_decide(struct classify *self, const struct classify_input *in,
		     struct classify_result *out)
{
	unsigned char memo[CLASSIFY_MEMO_SIZE] = { 0 };
	struct facts f = { .memo = memo };
	int64_t hint;

	assert(self != NULL && in != NULL && out != NULL);
	if (classify_patterns_ready(&self->pat) != 0) {
		out->verdict = CLASSIFY_NOT_RETRYABLE;
		out->overload = false;
		out->hint_ms = -1;
		snprintf(out->rule, sizeof(out->rule), "out-of-memory");
		return;
	}
	f.hay = self->text;
	f.len = errtext_normalize(self->text, in->text, in->text != NULL ? in->len : 0, in->body,
				  in->body != NULL ? in->body_len : 0);
	find_statuses(self, in->status, &f);
	find_typed(self, in->headers, &f);
	/* A request larger than its whole window: a typed overflow, as a provider's code. */
	if (classify_body_over_limit(f.hay, f.len))
		add_typed(&f, "requested-over-limit", 20);
	f.text_hint = hint_in_text(f.hay, f.len, in->now_ms, &hint) ? hint : -1;
	classify_body_google(in->body, in->body != NULL ? in->body_len : 0, &f.google);
	/* RetryInfo is the server's own typed word on the wait. */
	if (f.google.retry_ms >= 0)
		f.text_hint = f.google.retry_ms;
	f.hint = hint_in_headers(in->headers, in->now_ms, true, &hint) ? hint : f.text_hint;
	decide(self, &f, out);
	out->hint_ms = f.hint;
	/* A spent quota does not come back when a per-minute bucket refills:
	 * only the server's word on this refusal counts (retry-after, the text). */
	if (out->verdict == CLASSIFY_USAGE_LIMIT)
		out->hint_ms = hint_in_headers(in->headers, in->now_ms, false, &hint) ? hint
											: f.text_hint;
}

static struct classify_result decide_text(struct classify *self, const char *message, size_t len)
{
	struct classify_input in = { .text = message, .len = message != NULL ? len : 0 };
	struct classify_result out;

	classify_decide(self, &in, &out);
	return out;
}

enum classify_verdict classify_error(struct classify *self, const char *message, size_t len)
{
	return decide_text(self, message, len).verdict;
}

bool classify_is_usage_limit(struct classify *self, const char *message, size_t len)
{
	return classify_error(self, message, len) == CLASSIFY_USAGE_LIMIT;
}

bool classify_is_overload(struct classify *self, const char *message, size_t len)
{
	return decide_text(self, message, len).overload;
}

static const char verdict_names[][2][20] = {
	[CLASSIFY_RETRYABLE] = { "retryable", "retryable" },
	[CLASSIFY_NOT_RETRYABLE] = { "not-retryable", "non_retryable" },
	[CLASSIFY_CONTEXT_OVERFLOW] = { "context-overflow", "context_overflow" },
	[CLASSIFY_USAGE_LIMIT] = { "usage-limit", "usage_limit" },
	[CLASSIFY_UNKNOWN] = { "unknown", "unknown" },
};

const char *classify_verdict_name(enum classify_verdict verdict)
{
	return (unsigned)verdict <= CLASSIFY_UNKNOWN ? verdict_names[verdict][0] : "unknown";
}

const char *classify_class_name(enum classify_verdict verdict)
{
	return (unsigned)verdict <= CLASSIFY_UNKNOWN ? verdict_names[verdict][1] : "unknown";
}

json_t *classify_result_json(const struct classify_result *r)
{
	return json_pack("{s:s, s:b, s:o, s:s}", "errorClass", classify_class_name(r->verdict),
			 "overload", r->overload,
			 "hintMs", r->hint_ms >= 0 ? json_integer(r->hint_ms) : json_null(),
			 "rule", r->rule);
}
