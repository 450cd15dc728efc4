/* io/writer, io/reader, io/clock_uv: each owner of a uv handle closes
 * asynchronously and says when it is done (libuv's rule: free only after the
 * last close callback), so a caller can wait for it. Real pipes, a real loop. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "io/clock_uv.h"
#include "io/reader.h"
#include "io/writer.h"

Suite *writer_suite(void);

struct fixture {
	uv_loop_t loop;
	int fds[2];
	int closed;
};

static void count_closed(void *ctx)
{
	((struct fixture *)ctx)->closed++;
}

static void nothing_congested(void *ctx, bool congested)
{
	(void)ctx;
	(void)congested;
}

static void nothing_failed(void *ctx, int err)
{
	(void)ctx;
	(void)err;
}

static void on_data(void *ctx, const char *data, size_t len)
{
	(void)ctx;
	(void)data;
	(void)len;
}

static void on_eof(void *ctx)
{
	(void)ctx;
}

static struct fixture *fixture_new(void)
{
	struct fixture *f = calloc(1, sizeof(*f));

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(uv_loop_init(&f->loop), 0);
	ck_assert_int_eq(pipe(f->fds), 0);
	return f;
}

static void fixture_free(struct fixture *f)
{
	uv_run(&f->loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&f->loop), 0);
	close(f->fds[0]);
	close(f->fds[1]);
	free(f);
}

START_TEST(test_writer_close_writes_what_is_queued_then_calls_done_once)
{
	struct fixture *f = fixture_new();
	struct writer_callbacks cbs = { .congestion = nothing_congested, .failed = nothing_failed, .ctx = f };
	struct writer *w = writer_new(&f->loop, dup(f->fds[1]), 1 << 20, &cbs);
	json_t *obj = json_pack("{s:s}", "type", "ready");
	char buf[64] = "";

	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(writer_send(w, obj), 0);
	json_decref(obj);
	writer_close(w, count_closed, f);
	ck_assert_int_eq(f->closed, 0); /* not before libuv is done */
	uv_run(&f->loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(f->closed, 1);
	ck_assert_int_gt(read(f->fds[0], buf, sizeof(buf) - 1), 0);
	ck_assert_str_eq(buf, "{\"type\":\"ready\"}\n");
	fixture_free(f);
}
END_TEST

START_TEST(test_reader_close_calls_done_once_the_handle_is_closed)
{
	struct fixture *f = fixture_new();
	struct reader_callbacks cbs = { .data = on_data, .eof = on_eof, .ctx = f };
	struct reader *r = reader_new(&f->loop, f->fds[0], &cbs);

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(reader_start(r), 0);
	reader_close(r, count_closed, f);
	ck_assert_int_eq(f->closed, 0);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(f->closed, 1);
	f->fds[0] = dup(f->fds[1]); /* the reader's pipe closed it */
	fixture_free(f);
}
END_TEST

START_TEST(test_clock_uv_close_calls_done_once_the_timer_is_closed)
{
	struct fixture *f = fixture_new();
	struct clock_uv c;

	ck_assert_int_eq(clock_uv_init(&c, &f->loop), 0);
	clock_uv_close(&c, count_closed, f);
	ck_assert_int_eq(f->closed, 0);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(f->closed, 1);
	fixture_free(f);
}
END_TEST

Suite *writer_suite(void)
{
	Suite *s = suite_create("writer");
	TCase *tc = tcase_create("close");

	tcase_add_test(tc, test_writer_close_writes_what_is_queued_then_calls_done_once);
	tcase_add_test(tc, test_reader_close_calls_done_once_the_handle_is_closed);
	tcase_add_test(tc, test_clock_uv_close_calls_done_once_the_timer_is_closed);
	suite_add_tcase(s, tc);
	return s;
}
