/* Fuzz target "journal": a session file as --resume, --continue and
 * get_entries read it (src/core/journal.c): the header, message lines (some
 * "retried"), thinking-level and park lines, a torn last line.
 *
 * Input: the file's bytes. Invariants: a load either succeeds or says why
 * in a NUL-terminated sentence; a torn last line that was left out is said,
 * and the file cut at its last LF loads to the same session; what loads,
 * written again by a journal of its own, loads back to the same id and
 * messages (unless the masker changed a key-shaped string on the way);
 * get_entries reads a file a load accepted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/secret.h"
#include "core/journal.h"
#include "fuzz.h"

static char path_in[512], path_cut[512], path_out[512];

static int write_file(const char *path, const uint8_t *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int rc;

	if (f == NULL)
		return -1;
	rc = fwrite(data, 1, len, f) == len ? 0 : -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

static void check_text(const char *s, size_t cap, const char *what)
{
	FUZZ_CHECK(strnlen(s, cap) < cap, "%s not NUL-terminated", what);
}

/* True when the masker would leave the messages' text as it is. */
static bool unmasked(const json_t *messages)
{
	char *text = json_dumps(messages, JSON_COMPACT | JSON_ENCODE_ANY);
	size_t len;
	bool same;

	FUZZ_CHECK(text != NULL, "messages do not serialize");
	len = strlen(text);
	same = !secret_mask_json_text(text, &len);
	free(text);
	return same;
}

static void check_rewrite(const char *id, const json_t *messages)
{
	struct journal j;
	char err[512], id2[40], note[256];
	json_t *again = NULL;
	size_t i;
	json_t *m;

	remove(path_out);
	FUZZ_CHECK(journal_init(&j, path_out, id, 1764676800000) == 0, "journal_init failed");
	json_array_foreach(messages, i, m)
		FUZZ_CHECK(journal_append(&j, m, false, err, sizeof(err)) == 0, "append: %s", err);
	journal_release(&j);
	if (json_array_size(messages) == 0)
		return; /* no message: no file */
	FUZZ_CHECK(journal_load(path_out, id2, &again, note, sizeof(note), err, sizeof(err)) == 0,
		   "a file the journal wrote does not load: %s", err);
	FUZZ_CHECK(note[0] == '\0', "a file the journal wrote has a torn line: %s", note);
	FUZZ_CHECK(strcmp(id, id2) == 0, "id %s came back as %s", id, id2);
	FUZZ_CHECK(json_equal(messages, again), "messages changed on the way through a journal");
	json_decref(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char id[40], note[256], err[512];
	json_t *messages = NULL, *entries = NULL, *park;
	char *level;
	int rc;

	if (path_in[0] == '\0') {
		snprintf(path_in, sizeof(path_in), "%s/in.jsonl", fuzz_tmpdir());
		snprintf(path_cut, sizeof(path_cut), "%s/cut.jsonl", fuzz_tmpdir());
		snprintf(path_out, sizeof(path_out), "%s/out.jsonl", fuzz_tmpdir());
	}
	FUZZ_CHECK(write_file(path_in, data, size) == 0, "cannot write %s", path_in);
	memset(id, 'x', sizeof(id));
	memset(note, 'x', sizeof(note));
	err[0] = '\0';
	rc = journal_load(path_in, id, &messages, note, sizeof(note), err, sizeof(err));
	if (rc != 0) {
		check_text(err, sizeof(err), "error");
		FUZZ_CHECK(err[0] != '\0', "a refused file without a reason");
		FUZZ_CHECK(messages == NULL, "a refused file with messages");
	} else {
		check_text(id, sizeof(id), "id");
		check_text(note, sizeof(note), "note");
		FUZZ_CHECK(json_is_array(messages), "messages not an array");
		if (note[0] != '\0') {
			const uint8_t *lf = NULL;
			char id2[40], note2[256];
			json_t *cut = NULL;

			for (size_t i = size; i > 0 && lf == NULL; i--)
				if (data[i - 1] == '\n')
					lf = data + i - 1;
			FUZZ_CHECK(lf != NULL, "a torn line left out of a file without a whole one");
			FUZZ_CHECK(write_file(path_cut, data, (size_t)(lf - data) + 1) == 0,
				   "cannot write %s", path_cut);
			FUZZ_CHECK(journal_load(path_cut, id2, &cut, note2, sizeof(note2), err,
						sizeof(err)) == 0,
				   "the whole lines before a torn one do not load: %s", err);
			FUZZ_CHECK(note2[0] == '\0', "cut at its last LF, still torn: %s", note2);
			FUZZ_CHECK(strcmp(id, id2) == 0 && json_equal(messages, cut),
				   "the torn line changed what the whole lines load to");
			json_decref(cut);
		}
		if (unmasked(messages))
			check_rewrite(id, messages);
		err[0] = '\0';
		FUZZ_CHECK(journal_entries(path_in, &entries, err, sizeof(err)) == 0,
			   "get_entries refuses a file a load accepted: %s", err);
		FUZZ_CHECK(json_is_array(entries), "entries not an array");
		json_decref(entries);
	}
	json_decref(messages);
	park = journal_load_park(path_in);
	FUZZ_CHECK(park == NULL || json_is_object(park), "a park line that is not an object");
	json_decref(park);
	level = journal_load_thinking_level(path_in);
	free(level);
	return 0;
}
