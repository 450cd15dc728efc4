/* io/writer, io/reader, io/clock_uv: each owner of a uv handle closes
 * asynchronously and says when it is done (libuv's rule: free only after the
 * last close callback), so a caller can wait for it. Real pipes, a real loop. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
/* Sends `n` lines of about `size` bytes to a writer on fds[1] whose reader
 * never reads, lets the loop write for a few turns, closes the writer, then
 * reads everything: it must be whole lines, the first ones in order. */
static void check_whole_lines_after_close(struct fixture *f, size_t high, int n, size_t size)
{
	struct writer_callbacks cbs = { .congestion = nothing_congested, .failed = nothing_failed, .ctx = f };
	struct writer *w = writer_new(&f->loop, dup(f->fds[1]), high, &cbs);
	char *text = malloc(size + 1);
	size_t cap = (size_t)n * (size + 64), len = 0;
	char *got = malloc(cap);
	int lines = 0;

	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(got);
	for (int i = 0; i < n; i++) {
		json_t *obj;

		memset(text, 'a' + i % 26, size);
		text[size - (size_t)(i % 7) * 100] = '\0'; /* lines of unequal length */
		obj = json_pack("{s:i,s:s}", "n", i, "t", text);
		ck_assert_int_eq(writer_send(w, obj), 0);
		json_decref(obj);
	}
	for (int turn = 0; turn < 20; turn++)
		uv_run(&f->loop, UV_RUN_NOWAIT);
	ck_assert_uint_gt(writer_queued(w), 0); /* the reader is stalled */
	writer_close(w, count_closed, f);
	uv_run(&f->loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(f->closed, 1);
	close(f->fds[1]);
	f->fds[1] = dup(f->fds[0]);
	for (;;) {
		ssize_t r = read(f->fds[0], got + len, cap - len);

		if (r <= 0)
			break;
		len += (size_t)r;
	}
	ck_assert_uint_gt(len, 0);
	ck_assert_msg(got[len - 1] == '\n', "the last line is cut after %zu bytes", len);
	for (size_t at = 0; at < len; lines++) {
		char *nl = memchr(got + at, '\n', len - at);
		json_error_t jerr;
		json_t *obj = json_loadb(got + at, (size_t)(nl - (got + at)), 0, &jerr);

		ck_assert_msg(obj != NULL, "line %d: %s", lines, jerr.text);
		ck_assert_int_eq(json_integer_value(json_object_get(obj, "n")), lines);
		json_decref(obj);
		at = (size_t)(nl - got) + 1;
	}
	ck_assert_int_gt(lines, 0);
	ck_assert_int_lt(lines, n);
	free(text);
	free(got);
}

#ifdef __linux__
START_TEST(test_writer_closed_on_a_stalled_pipe_leaves_only_whole_lines)
{
	struct fixture *f = fixture_new();

	ck_assert_int_eq(fcntl(f->fds[0], F_SETFL, O_NONBLOCK), 0);
	/* high = 16 KiB: the writer sizes the pipe to that; lines of 700 B to 3 KB. */
	check_whole_lines_after_close(f, 16384, 200, 3000);
	fixture_free(f);
}
END_TEST

START_TEST(test_writer_closed_on_a_stalled_unix_socket_leaves_only_whole_lines)
{
	struct fixture *f = fixture_new();
	int small = 16384;

	close(f->fds[0]);
	close(f->fds[1]);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, f->fds), 0);
	ck_assert_int_eq(setsockopt(f->fds[1], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	ck_assert_int_eq(fcntl(f->fds[0], F_SETFL, O_NONBLOCK), 0);
	check_whole_lines_after_close(f, 1 << 20, 400, 20000);
	fixture_free(f);
}
END_TEST
#endif

Suite *writer_suite(void)
{
	Suite *s = suite_create("writer");
	TCase *tc = tcase_create("close");

	tcase_add_test(tc, test_writer_close_writes_what_is_queued_then_calls_done_once);
	tcase_add_test(tc, test_reader_close_calls_done_once_the_handle_is_closed);
	tcase_add_test(tc, test_clock_uv_close_calls_done_once_the_timer_is_closed);
#ifdef __linux__
	tcase_add_test(tc, test_writer_closed_on_a_stalled_pipe_leaves_only_whole_lines);
	tcase_add_test(tc, test_writer_closed_on_a_stalled_unix_socket_leaves_only_whole_lines);
#endif
	suite_add_tcase(s, tc);
	return s;
}
