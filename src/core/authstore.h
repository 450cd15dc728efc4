/* authstore — the credentials of the current provider, and which of them a
 * usage limit has exhausted until when. Pure: times are passed in. */
#ifndef RETRYD_AUTHSTORE_H
#define RETRYD_AUTHSTORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct authstore {
	size_t count;
	char **names;              /* owned */
	int64_t *exhausted_until;  /* owned: wall ms; 0 = available */
	size_t current;
};

/* names: borrowed array of strings (others are skipped); may be NULL/empty. */
int authstore_init(struct authstore *self, const json_t *names);
void authstore_release(struct authstore *self);

/* The credential in use, or NULL when there is none. */
const char *authstore_current(const struct authstore *self);
/* Marks the current credential exhausted until `until_ms` (wall clock). */
void authstore_mark_exhausted(struct authstore *self, int64_t until_ms);
/* The next credential after the current one that is available at now_ms,
 * or -1. */
int authstore_next_available(const struct authstore *self, int64_t now_ms);
void authstore_use(struct authstore *self, size_t index);

#endif
