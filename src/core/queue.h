/* queue — the steering and follow-up queues of a session.
 *
 * A queue is a JSON array of items {"message", "policy", "autoRetryGen"}:
 * the user message, the retry policy snapshot taken when it was accepted, and
 * the session's set_auto_retry count then. Pure. */
#ifndef RETRYD_QUEUE_H
#define RETRYD_QUEUE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* A new item (new reference), or NULL when memory ran out. text, images:
 * borrowed; policy: takes ownership. */
json_t *queue_item_new(const char *text, const json_t *images, int64_t timestamp_ms,
		       json_t *policy, unsigned auto_retry_gen);

/* Takes the first item, or every item when `all`, off `queue` (borrowed):
 * a new array (new reference) of the items taken. */
json_t *queue_take(json_t *queue, bool all);

/* Moves the text of every item of `queue` (borrowed) to the array `out`
 * (borrowed), and empties the queue: what abort reports it dropped. */
void queue_drop_texts(json_t *queue, json_t *out);
/* Appends the promptId of each item of queue that has one (a prompt's,
 * not a steer's or follow_up's) to ids. */
void queue_prompt_ids(const json_t *queue, json_t *ids);

#endif
