/* Fuzz target "jsontext": the hand-written output of the delta hot path
 * (src/base/jsontext.c) against jansson, and the UTF-8 checks it relies on
 * (src/utf8.c).
 *
 * Input: any bytes, taken as one text delta, and (when it parses) as a JSON
 * document.
 *
 * Invariants: utf8_valid() accepts exactly what jansson accepts as a string;
 * for such text, jsontext_delta_append() writes the bytes jansson's compact
 * dump of the same event writes; utf8_repair() always yields text jansson
 * accepts, and leaves well-formed text alone; jsontext_dump() writes what
 * jansson's json_dumps(JSON_COMPACT) writes for any document jansson reads. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "base/jsontext.h"
#include "base/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	json_t *str = json_stringn(s, size);
	bool valid = utf8_valid(s, size);
	char *copy;

	FUZZ_CHECK(valid == (str != NULL), "utf8_valid says %d, jansson %d", valid, str != NULL);
	json_decref(str);
	if (valid) {
		json_t *ev = json_pack("{s:s, s:{s:s, s:i, s:s%}}", "type", "message_update",
				       "assistantMessageEvent", "type", "text_delta",
				       "contentIndex", (int)(size % 3), "delta", s, size);
		char *dump = json_dumps(ev, JSON_COMPACT);
		struct jsontext_buf b = { 0 };

		FUZZ_CHECK(dump != NULL, "jansson could not dump the event");
		FUZZ_CHECK(jsontext_delta_append(&b, size % 3, s, size) == 0, "jsontext refused valid text");
		FUZZ_CHECK(b.len == strlen(dump) + 1 && memcmp(b.data, dump, b.len - 1) == 0 &&
			   b.data[b.len - 1] == '\n', "jsontext and jansson differ");
		free(b.data);
		free(dump);
		json_decref(ev);
	}
	/* The writer's serializer against jansson's, on whatever jansson reads. */
	{
		json_t *doc = json_loadb(s, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

		if (doc != NULL) {
			char *want = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
			struct jsontext_buf b = { 0 };
			int rc = jsontext_dump(doc, &b);

			FUZZ_CHECK((want == NULL) == (rc != 0), "jansson %s, jsontext %d",
				   want ? "dumped" : "failed", rc);
			if (want != NULL)
				FUZZ_CHECK(b.len == strlen(want) && memcmp(b.data, want, b.len) == 0,
					   "jsontext_dump differs: %.*s\njansson:           %s",
					   (int)(b.len > 300 ? 300 : b.len), b.data, want);
			free(want);
			free(b.data);
			json_decref(doc);
		}
	}
	/* utf8_repair works on C strings: up to the first NUL. */
	copy = strndup(s, size);
	if (copy != NULL) {
		size_t before = strlen(copy);
		bool was_valid = utf8_valid(copy, before);
		char *orig = was_valid ? strdup(copy) : NULL;

		utf8_repair(copy);
		FUZZ_CHECK(utf8_valid(copy, strlen(copy)), "utf8_repair left invalid text");
		FUZZ_CHECK(strlen(copy) <= before, "utf8_repair grew the text");
		if (orig != NULL)
			FUZZ_CHECK(strcmp(orig, copy) == 0, "utf8_repair changed valid text");
		free(orig);
		free(copy);
	}
	return 0;
}
