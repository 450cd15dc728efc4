/* classify_body — a provider's typed error body as the classifier reads
 * it. Today one shape: Google's google.rpc.Status, {"error": {"code",
 * "message", "status", "details": [RetryInfo, QuotaFailure, ErrorInfo]}},
 * which Gemini and Vertex send. Pure; parsing a body that is a JSON object
 * is the one allocation of a decision. */
#ifndef RETRYD_CLASSIFY_BODY_H
#define RETRYD_CLASSIFY_BODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a quota violation's id or metric says about its window. */
enum google_scope {
	GOOGLE_SCOPE_NONE,
	GOOGLE_SCOPE_MINUTE,	/* PerMinute, PerSecond: a rate limit */
	GOOGLE_SCOPE_DAY,	/* PerDay, PerMonth: a spent quota */
	GOOGLE_SCOPE_ZERO,	/* quotaValue 0: the tier has none at all */
};

/* The fields of a google.rpc.Status the decision reads. */
struct google_status {
	bool found;		/* the body is a google.rpc.Status */
	char status[32];	/* error.status ("RESOURCE_EXHAUSTED"), "" none */
	char reason[64];	/* ErrorInfo.reason, "" none */
	enum google_scope scope;	/* the widest window among the violations */
	char quota[72];		/* the quotaId (else quotaMetric) of that window */
	int64_t retry_ms;	/* RetryInfo.retryDelay, -1 none */
};

/* The body (borrowed, `len` bytes, NULL only with 0) as a google.rpc.Status,
 * into g; g->found is false when it is none. A status or reason that is
 * not an upper-case identifier is left out (""). */
void classify_body_google(const char *body, size_t len, struct google_status *g);

/* A rate window's own numbers, as OpenAI, Azure and Groq print them
 * ("Limit 6000, Used 5034, Requested 14368"): true when the request alone
 * asks for more than the whole window, which no wait mends. text (borrowed,
 * `len` bytes) is the normalised text. */
bool classify_body_over_limit(const char *text, size_t len);

#endif
