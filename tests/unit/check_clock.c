#include <check.h>

#include "core/authstore.h"
#include "base/clock.h"

Suite *clock_suite(void);

struct log {
	char order[16];
	int n;
	uint64_t at[16];
};

struct probe {
	struct log *log;
	char tag;
	struct clock *clock;
	struct clock_timer *restart; /* started again from the callback, 0 ms */
};

static void fire(struct clock_timer *t, void *ctx)
{
	struct probe *p = ctx;

	(void)t;
	p->log->at[p->log->n] = clock_now(p->clock);
	p->log->order[p->log->n++] = p->tag;
	if (p->restart != NULL) {
		struct clock_timer *r = p->restart;

		p->restart = NULL;
		clock_timer_start(p->clock, r, 0, fire, p);
	}
}

START_TEST(test_timers_fire_in_deadline_order_at_their_time)
{
	struct clock c;
	struct clock_timer a = { 0 }, b = { 0 }, d = { 0 };
	struct log log = { 0 };
	struct probe pa = { &log, 'a', &c, NULL }, pb = { &log, 'b', &c, NULL }, pd = { &log, 'd', &c, NULL };

	clock_fake_init(&c, 1000);
	clock_timer_start(&c, &a, 300, fire, &pa);
	clock_timer_start(&c, &b, 100, fire, &pb);
	clock_timer_start(&c, &d, 200, fire, &pd);
	clock_fake_advance(&c, 150);
	ck_assert_int_eq(log.n, 1);
	clock_fake_advance(&c, 1000);
	ck_assert_int_eq(log.n, 3);
	ck_assert_int_eq(log.order[0], 'b');
	ck_assert_int_eq(log.order[1], 'd');
	ck_assert_int_eq(log.order[2], 'a');
	ck_assert_uint_eq(log.at[0], 1100);
	ck_assert_uint_eq(log.at[1], 1200);
	ck_assert_uint_eq(log.at[2], 1300);
	ck_assert_uint_eq(clock_now(&c), 2150);
}
END_TEST

START_TEST(test_stopped_timer_never_fires)
{
	struct clock c;
	struct clock_timer a = { 0 };
	struct log log = { 0 };
	struct probe pa = { &log, 'a', &c, NULL };

	clock_fake_init(&c, 0);
	clock_timer_start(&c, &a, 10, fire, &pa);
	ck_assert(clock_timer_active(&a));
	clock_timer_stop(&c, &a);
	ck_assert(!clock_timer_active(&a));
	clock_timer_stop(&c, &a);
	clock_fake_advance(&c, 100);
	ck_assert_int_eq(log.n, 0);
	ck_assert_int_eq(clock_fake_next_in(&c), -1);
}
END_TEST

START_TEST(test_restart_moves_the_deadline)
{
	struct clock c;
	struct clock_timer a = { 0 };
	struct log log = { 0 };
	struct probe pa = { &log, 'a', &c, NULL };

	clock_fake_init(&c, 0);
	clock_timer_start(&c, &a, 10, fire, &pa);
	clock_fake_advance(&c, 5);
	clock_timer_start(&c, &a, 10, fire, &pa);
	clock_fake_advance(&c, 9);
	ck_assert_int_eq(log.n, 0);
	clock_fake_advance(&c, 1);
	ck_assert_int_eq(log.n, 1);
	ck_assert_uint_eq(log.at[0], 15);
}
END_TEST

START_TEST(test_zero_delay_timer_started_in_callback_yields)
{
	struct clock c;
	struct clock_timer a = { 0 }, again = { 0 };
	struct log log = { 0 };
	struct probe pa = { &log, 'a', &c, &again };

	clock_fake_init(&c, 0);
	clock_timer_start(&c, &a, 0, fire, &pa);
	clock_run_due(&c);
	/* The 0 ms timer started inside the pass waits for the next pass. */
	ck_assert_int_eq(log.n, 1);
	ck_assert_int_eq(clock_fake_next_in(&c), 0);
	clock_run_due(&c);
	ck_assert_int_eq(log.n, 2);
}
END_TEST

START_TEST(test_equal_deadlines_fire_in_start_order)
{
	struct clock c;
	struct clock_timer t[3] = { { 0 } };
	struct log log = { 0 };
	struct probe p[3] = { { &log, 'x', &c, NULL }, { &log, 'y', &c, NULL }, { &log, 'z', &c, NULL } };

	clock_fake_init(&c, 0);
	for (int i = 0; i < 3; i++)
		clock_timer_start(&c, &t[i], 50, fire, &p[i]);
	clock_fake_advance(&c, 50);
	ck_assert_int_eq(log.n, 3);
	ck_assert_int_eq(log.order[0], 'x');
	ck_assert_int_eq(log.order[1], 'y');
	ck_assert_int_eq(log.order[2], 'z');
}
END_TEST

START_TEST(test_authstore_switches_to_next_available_credential)
{
	struct authstore a;
	json_t *names = json_pack("[s, s, s]", "a", "b", "c");

	ck_assert_int_eq(authstore_init(&a, names), 0);
	ck_assert_str_eq(authstore_current(&a), "a");
	authstore_mark_exhausted(&a, 5000);
	ck_assert_int_eq(authstore_next_available(&a, 1000), 1);
	authstore_use(&a, 1);
	authstore_mark_exhausted(&a, 5000);
	ck_assert_int_eq(authstore_next_available(&a, 1000), 2);
	authstore_use(&a, 2);
	authstore_mark_exhausted(&a, 5000);
	ck_assert_int_eq(authstore_next_available(&a, 1000), -1);
	/* After the reset time the first one is usable again. */
	ck_assert_int_eq(authstore_next_available(&a, 5000), 0);
	authstore_release(&a);
	json_decref(names);
}
END_TEST

START_TEST(test_authstore_without_credentials_never_switches)
{
	struct authstore a;

	ck_assert_int_eq(authstore_init(&a, NULL), 0);
	ck_assert_ptr_null(authstore_current(&a));
	authstore_mark_exhausted(&a, 10);
	ck_assert_int_eq(authstore_next_available(&a, 0), -1);
	authstore_release(&a);
}
END_TEST

Suite *clock_suite(void)
{
	Suite *s = suite_create("clock");
	TCase *tc = tcase_create("fake");
	TCase *auth = tcase_create("authstore");

	tcase_add_test(tc, test_timers_fire_in_deadline_order_at_their_time);
	tcase_add_test(tc, test_stopped_timer_never_fires);
	tcase_add_test(tc, test_restart_moves_the_deadline);
	tcase_add_test(tc, test_zero_delay_timer_started_in_callback_yields);
	tcase_add_test(tc, test_equal_deadlines_fire_in_start_order);
	tcase_add_test(auth, test_authstore_switches_to_next_available_credential);
	tcase_add_test(auth, test_authstore_without_credentials_never_switches);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, auth);
	return s;
}
