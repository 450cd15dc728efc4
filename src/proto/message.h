/* message — pi's message shapes that the session builds and reads.
 *
 * Pure: values in, a json_t out (new reference, or NULL when memory ran out
 * or a string was not UTF-8). The shapes: protocol/README.md section 6. */
#ifndef RETRYD_PROTO_MESSAGE_H
#define RETRYD_PROTO_MESSAGE_H

#include <jansson.h>
#include <stdint.h>

/* {"role":"user","content":[{"type":"text","text"}, images...],"timestamp"}.
 * text, images (an array of image blocks, may be NULL): borrowed. */
json_t *message_user(const char *text, const json_t *images, int64_t timestamp_ms);

/* get_session_stats' data for a conversation: counts by role and the summed
 * usage of `messages` (borrowed): a count that is not a whole number >= 0
 * counts 0, sums saturate at NUMBER_MAX. session_file may be NULL. */
json_t *message_stats(const json_t *messages, const char *session_id, const char *session_file);

#endif
