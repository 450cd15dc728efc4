/* The session file read back for a resume, and the newest file found for
 * --continue: through temporary files, no daemon. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "core/journal.h"

Suite *journal_suite(void);

struct jfx {
	char dir[64];
	char paths[4][160];
	int n;
};

static void jfx_init(struct jfx *f)
{
	memset(f, 0, sizeof(*f));
	strcpy(f->dir, "/tmp/retryd-journal-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(f->dir));
}

/* Writes body to dir/name; returns the path (valid until jfx_release). */
static const char *jfx_file(struct jfx *f, const char *name, const char *body, long age_s)
{
	char *path = f->paths[f->n++];
	char buf[sizeof(f->paths[0])];
	FILE *fp;

	snprintf(buf, sizeof(buf), "%s/%s", f->dir, name);
	memcpy(path, buf, sizeof(buf));
	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fputs(body, fp);
	fclose(fp);
	if (age_s > 0) {
		struct timeval tv[2];

		gettimeofday(&tv[0], NULL);
		tv[0].tv_sec -= age_s;
		tv[1] = tv[0];
		ck_assert_int_eq(utimes(path, tv), 0);
	}
	return path;
}

static void jfx_release(struct jfx *f)
{
	for (int i = 0; i < f->n; i++)
		unlink(f->paths[i]);
	rmdir(f->dir);
}

#define HEADER(id) "{\"type\":\"session\",\"version\":1,\"id\":\"" id "\",\"timestamp\":\"\",\"cwd\":\"\"}\n"
#define USER(t) "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"" t "\"}]}}\n"
#define FAILED(retried) "{\"type\":\"message\"" retried ",\"message\":{\"role\":\"assistant\",\"content\":[],\"stopReason\":\"error\"}}\n"

START_TEST(test_load_takes_the_last_session_without_retried_attempts)
{
	struct jfx f;
	char id[40], err[512];
	json_t *msgs;
	const char *path;

	jfx_init(&f);
	path = jfx_file(&f, "s.jsonl",
			HEADER("first") USER("old") "\n"
			HEADER("second") USER("q") FAILED(",\"retried\":true") FAILED("")
			"{\"type\":\"label\",\"x\":1}\n", 0);
	ck_assert_msg(journal_load(path, id, &msgs, NULL, 0, err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(id, "second");
	ck_assert_int_eq(json_array_size(msgs), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(msgs, 0), "role")), "user");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(msgs, 1), "stopReason")),
			 "error");
	json_decref(msgs);
	jfx_release(&f);
}
END_TEST

START_TEST(test_load_refuses_files_that_are_not_session_files_naming_them)
{
	static const char *const bodies[] = {
		"", "not json\n", USER("no header"), HEADER("a") "{\"type\":\"message\"}\n",
		HEADER("a") "[1]\n", "{\"type\":\"session\",\"id\":\"\"}\n",
	};
	struct jfx f;
	char id[40], err[512], name[32];
	json_t *msgs;

	jfx_init(&f);
	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		const char *path;

		snprintf(name, sizeof(name), "bad%zu.jsonl", i);
		f.n = 0;
		path = jfx_file(&f, name, bodies[i], 0);
		ck_assert_int_eq(journal_load(path, id, &msgs, NULL, 0, err, sizeof(err)), -1);
		ck_assert_ptr_null(msgs);
		ck_assert_msg(strstr(err, path) != NULL, "%s", err);
		unlink(path);
	}
	f.n = 0;
	ck_assert_int_eq(journal_load("/nonexistent/x.jsonl", id, &msgs, NULL, 0, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, "/nonexistent/x.jsonl: No such file") != NULL, "%s", err);
	jfx_release(&f);
}
END_TEST

START_TEST(test_newest_is_the_latest_modified_jsonl_file)
{
	struct jfx f;
	char err[512];
	char *got;
	char sub[128];

	jfx_init(&f);
	got = journal_newest(f.dir, err, sizeof(err));
	ck_assert_ptr_null(got);
	ck_assert_msg(strstr(err, f.dir) != NULL, "%s", err);
	jfx_file(&f, "b.jsonl", HEADER("b"), 100);
	jfx_file(&f, "a.jsonl", HEADER("a"), 10);
	jfx_file(&f, "z.txt", "newer but not a session", 0);
	snprintf(sub, sizeof(sub), "%s/dir.jsonl", f.dir);
	ck_assert_int_eq(mkdir(sub, 0700), 0);
	got = journal_newest(f.dir, err, sizeof(err));
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, f.paths[1]);
	free(got);
	rmdir(sub);
	got = journal_newest("/nonexistent/dir", err, sizeof(err));
	ck_assert_ptr_null(got);
	ck_assert_msg(strstr(err, "/nonexistent/dir") != NULL, "%s", err);
	jfx_release(&f);
}
END_TEST

/* A level change before any message waits for the file (an unused session
 * leaves none); once the file is open it is written at once; a resume reads
 * the last one of the last session. */
START_TEST(test_thinking_level_changes_are_written_as_pi_does_and_read_back)
{
	struct jfx f;
	struct journal j;
	char err[512], path[200], *level, *text;
	json_t *msg = json_pack("{s:s, s:s}", "role", "user", "content", "hi");
	FILE *fp;
	long n;

	jfx_init(&f);
	snprintf(path, sizeof(path), "%s/s.jsonl", f.dir);
	ck_assert_int_eq(journal_init(&j, path, "id1", 1795986529387), 0);
	ck_assert_int_eq(journal_thinking_level(&j, "high", 1795986529387, err, sizeof(err)), 0);
	ck_assert_int_eq(access(path, F_OK), -1);
	ck_assert_int_eq(journal_append(&j, msg, false, err, sizeof(err)), 0);
	ck_assert_int_eq(journal_thinking_level(&j, "low", 1795986529388, err, sizeof(err)), 0);
	journal_release(&j);
	fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	text = calloc(1, 4096);
	n = (long)fread(text, 1, 4095, fp);
	fclose(fp);
	ck_assert_int_gt(n, 0);
	ck_assert_ptr_nonnull(strstr(text, "\n{\"type\":\"thinking_level_change\","
				     "\"timestamp\":\"2026-11-29T21:08:49.387Z\",\"thinkingLevel\":\"high\"}\n"
				     "{\"type\":\"message\""));
	ck_assert_ptr_nonnull(strstr(text, "\"thinkingLevel\":\"low\"}\n"));
	free(text);
	level = journal_load_thinking_level(path);
	ck_assert_str_eq(level, "low");
	free(level);
	/* A later session in the file without a change has none. */
	fp = fopen(path, "a");
	fputs(HEADER("id2"), fp);
	fclose(fp);
	ck_assert_ptr_null(journal_load_thinking_level(path));
	ck_assert_ptr_null(journal_load_thinking_level("/nonexistent/s.jsonl"));
	unlink(path);
	json_decref(msg);
	jfx_release(&f);
}
END_TEST

START_TEST(test_a_park_line_counts_only_when_nothing_follows_it)
{
	struct jfx f;
	struct journal j;
	char err[512], path[200];
	json_t *rec = json_pack("{s:I, s:s}", "resetAtMs", (json_int_t)1767226000000, "resetSource",
				"body");
	json_t *msg = json_pack("{s:s, s:[]}", "role", "user", "content");
	json_t *got;

	jfx_init(&f);
	snprintf(path, sizeof(path), "%s/p.jsonl", f.dir);
	ck_assert_int_eq(journal_init(&j, path, "sid", 1767225600000), 0);
	ck_assert_int_eq(journal_append(&j, msg, false, err, sizeof(err)), 0);
	ck_assert_int_eq(journal_park(&j, rec, 1767225601000, err, sizeof(err)), 0);
	got = journal_load_park(path);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(json_string_value(json_object_get(got, "type")), "park");
	ck_assert_str_eq(json_string_value(json_object_get(got, "resetSource")), "body");
	ck_assert_int_eq(json_integer_value(json_object_get(got, "resetAtMs")), 1767226000000);
	json_decref(got);
	/* Cancelled: nothing to resume. */
	ck_assert_int_eq(journal_park(&j, NULL, 1767225602000, err, sizeof(err)), 0);
	ck_assert_ptr_null(journal_load_park(path));
	/* Parked again, then the probe's answer came: nothing to resume. */
	ck_assert_int_eq(journal_park(&j, rec, 1767225603000, err, sizeof(err)), 0);
	ck_assert_int_eq(journal_append(&j, msg, false, err, sizeof(err)), 0);
	ck_assert_ptr_null(journal_load_park(path));
	ck_assert_ptr_null(journal_load_park("/nonexistent/p.jsonl"));
	journal_release(&j);
	unlink(path);
	json_decref(rec);
	json_decref(msg);
	jfx_release(&f);
}
END_TEST

/* A kill in the middle of a long line leaves a piece without its LF. */
START_TEST(test_load_keeps_every_whole_line_of_a_file_with_a_torn_last_line)
{
	struct jfx f;
	const char *path;
	char id[40], err[512], note[256];
	json_t *msgs = NULL;

	jfx_init(&f);
	path = jfx_file(&f, "torn.jsonl", HEADER("s1") USER("one") USER("two")
			"{\"type\":\"message\",\"message\":{\"role\":\"us", 0);
	ck_assert_msg(journal_load(path, id, &msgs, note, sizeof(note), err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(json_array_size(msgs), 2);
	ck_assert_str_eq(note, "its last line (line 4, 39 bytes) was cut off before its end and "
			 "was left out");
	json_decref(msgs);
	/* A last line that is whole but for its LF is kept, and nothing is said. */
	path = jfx_file(&f, "nolf.jsonl", HEADER("s1") USER("one") "{\"type\":\"message\","
			"\"message\":{\"role\":\"user\",\"content\":[]}}", 0);
	ck_assert_int_eq(journal_load(path, id, &msgs, note, sizeof(note), err, sizeof(err)), 0);
	ck_assert_int_eq(json_array_size(msgs), 2);
	ck_assert_str_eq(note, "");
	json_decref(msgs);
	/* A torn line in the middle is no torn last line. */
	path = jfx_file(&f, "mid.jsonl", HEADER("s1") "{\"type\":\"mess\n" USER("two"), 0);
	ck_assert_int_eq(journal_load(path, id, &msgs, note, sizeof(note), err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "line 2 is not a JSON object"));
	jfx_release(&f);
}
END_TEST

/* The next line after a torn one starts clean: the piece is cut back. */
START_TEST(test_appending_to_a_torn_file_cuts_the_torn_piece_first)
{
	struct jfx f;
	struct journal j;
	const char *path;
	char id[40], err[512], note[256];
	json_t *msgs = NULL, *msg = json_pack("{s:s, s:[]}", "role", "user", "content");

	jfx_init(&f);
	path = jfx_file(&f, "torn.jsonl", HEADER("s1") USER("one") "{\"type\":\"mes", 0);
	ck_assert_int_eq(journal_init(&j, path, "s1", 1), 0);
	journal_continue(&j);
	ck_assert_int_eq(journal_append(&j, msg, false, err, sizeof(err)), 0);
	journal_release(&j);
	ck_assert_msg(journal_load(path, id, &msgs, note, sizeof(note), err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(json_array_size(msgs), 2);
	ck_assert_str_eq(note, "");
	json_decref(msgs);
	json_decref(msg);
	jfx_release(&f);
}
END_TEST

START_TEST(test_a_file_another_holds_the_lock_of_cannot_be_claimed_or_written)
{
	struct jfx f;
	struct journal j;
	const char *path;
	char err[512];
	json_t *msg = json_pack("{s:s, s:[]}", "role", "user", "content");
	int other;

	jfx_init(&f);
	path = jfx_file(&f, "s.jsonl", HEADER("s1"), 0);
	/* Another open file description: as good as another process. */
	other = open(path, O_RDONLY);
	ck_assert_int_ge(other, 0);
	ck_assert_int_eq(flock(other, LOCK_EX | LOCK_NB), 0);
	ck_assert_int_eq(journal_claim(path, err, sizeof(err)), -EAGAIN);
	ck_assert_ptr_nonnull(strstr(err, "is in use by another retryd"));
	ck_assert_int_eq(journal_init(&j, path, "s2", 1), 0);
	ck_assert_int_eq(journal_append(&j, msg, false, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "is in use by another retryd"));
	journal_release(&j);
	close(other);
	/* Free again: claimed, and the journal writes through the claim. */
	ck_assert_int_eq(journal_claim(path, err, sizeof(err)), 0);
	ck_assert_int_eq(journal_init(&j, path, "s2", 1), 0);
	ck_assert_int_eq(journal_append(&j, msg, false, err, sizeof(err)), 0);
	journal_release(&j);
	journal_unclaim();
	/* Nothing there yet is nothing to claim. */
	ck_assert_int_eq(journal_claim("/nonexistent/x.jsonl", err, sizeof(err)), 0);
	journal_unclaim();
	json_decref(msg);
	jfx_release(&f);
}
END_TEST

START_TEST(test_a_new_file_is_0600_whatever_the_umask)
{
	struct jfx f;
	struct journal j;
	char path[200], err[512];
	json_t *msg = json_pack("{s:s, s:[]}", "role", "user", "content");
	struct stat st;
	mode_t old = umask(0);

	jfx_init(&f);
	snprintf(path, sizeof(path), "%s/sub/s.jsonl", f.dir);
	ck_assert_int_eq(journal_init(&j, path, "s1", 1), 0);
	ck_assert_int_eq(journal_append(&j, msg, false, err, sizeof(err)), 0);
	journal_release(&j);
	umask(old);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	unlink(path);
	snprintf(path, sizeof(path), "%s/sub", f.dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	rmdir(path);
	json_decref(msg);
	jfx_release(&f);
}
END_TEST

Suite *journal_suite(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_load_takes_the_last_session_without_retried_attempts);
	tcase_add_test(tc, test_load_refuses_files_that_are_not_session_files_naming_them);
	tcase_add_test(tc, test_newest_is_the_latest_modified_jsonl_file);
	tcase_add_test(tc, test_thinking_level_changes_are_written_as_pi_does_and_read_back);
	tcase_add_test(tc, test_a_park_line_counts_only_when_nothing_follows_it);
	tcase_add_test(tc, test_load_keeps_every_whole_line_of_a_file_with_a_torn_last_line);
	tcase_add_test(tc, test_appending_to_a_torn_file_cuts_the_torn_piece_first);
	tcase_add_test(tc, test_a_file_another_holds_the_lock_of_cannot_be_claimed_or_written);
	tcase_add_test(tc, test_a_new_file_is_0600_whatever_the_umask);
	suite_add_tcase(s, tc);
	return s;
}
