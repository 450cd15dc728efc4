/* The session file read back for a resume, and the newest file found for
 * --continue: through temporary files, no daemon. */
#include <check.h>
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
	ck_assert_msg(journal_load(path, id, &msgs, err, sizeof(err)) == 0, "%s", err);
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
		ck_assert_int_eq(journal_load(path, id, &msgs, err, sizeof(err)), -1);
		ck_assert_ptr_null(msgs);
		ck_assert_msg(strstr(err, path) != NULL, "%s", err);
		unlink(path);
	}
	f.n = 0;
	ck_assert_int_eq(journal_load("/nonexistent/x.jsonl", id, &msgs, err, sizeof(err)), -1);
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

Suite *journal_suite(void)
{
	Suite *s = suite_create("journal");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_load_takes_the_last_session_without_retried_attempts);
	tcase_add_test(tc, test_load_refuses_files_that_are_not_session_files_naming_them);
	tcase_add_test(tc, test_newest_is_the_latest_modified_jsonl_file);
	tcase_add_test(tc, test_thinking_level_changes_are_written_as_pi_does_and_read_back);
	suite_add_tcase(s, tc);
	return s;
}
