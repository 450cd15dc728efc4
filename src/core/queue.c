#include "core/queue.h"

#include "proto/message.h"

json_t *queue_item_new(const char *text, const json_t *images, int64_t timestamp_ms,
		       json_t *policy, unsigned auto_retry_gen)
{
	/* As the user wrote it: this is what the provider gets. What retryd
	 * prints and stores of it is masked on the way out (io/writer,
	 * core/journal, base/log). */
	json_t *message = message_user(text, images, timestamp_ms);

	return json_pack("{s:o, s:o, s:I}", "message", message, "policy", policy, "autoRetryGen",
			 (json_int_t)auto_retry_gen);
}

json_t *queue_take(json_t *queue, bool all)
{
	json_t *out;

	if (all) {
		out = json_copy(queue);
		json_array_clear(queue);
		return out;
	}
	out = json_array();
	json_array_append(out, json_array_get(queue, 0));
	json_array_remove(queue, 0);
	return out;
}

void queue_drop_texts(json_t *queue, json_t *out)
{
	size_t i;
	json_t *item;

	json_array_foreach(queue, i, item) {
		json_t *content = json_object_get(json_object_get(item, "message"), "content");

		json_array_append(out, json_object_get(json_array_get(content, 0), "text"));
	}
	json_array_clear(queue);
}

void queue_prompt_ids(const json_t *queue, json_t *ids)
{
	size_t i;
	json_t *item;

	json_array_foreach(queue, i, item)
		if (json_object_get(item, "promptId") != NULL)
			json_array_append(ids, json_object_get(item, "promptId"));
}
