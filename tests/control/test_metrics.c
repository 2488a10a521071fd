/* test_metrics.c — the Prometheus text checker itself (it must refuse each kind of
 * fault, or the metrics tests prove nothing), and garudad's metrics as they change:
 * counters grow with completions, gauges follow clients, the histogram stays valid. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_harness.h"
#include "deadline.h"

TestSuite(metrics, .init = ctl_test_init, .fini = ctl_test_fini, .timeout = 120);

Test(metrics, checker_accepts_good_text)
{
	const char *good = "# HELP a_total things\n# TYPE a_total counter\na_total 3\n"
			   "# TYPE g gauge\ng{x=\"1\"} 2.5\ng{x=\"a\\\"b\\\\c\\n\"} -1 1700000000000\n"
			   "# TYPE h histogram\n"
			   "h_bucket{s=\"0\",le=\"0.1\"} 1\nh_bucket{s=\"0\",le=\"1\"} 1\n"
			   "h_bucket{s=\"0\",le=\"+Inf\"} 4\nh_count{s=\"0\"} 4\nh_sum{s=\"0\"} 0.5\n"
			   "h_bucket{s=\"1\",le=\"+Inf\"} 0\nh_count{s=\"1\"} 0\n";
	char *e = prom_check(good);
	cr_assert_null(e, "%s", e);
	cr_assert_eq(prom_value(good, "a_total"), 3);
	cr_assert_eq(prom_value(good, "g{x=\"1\"}"), 2.5);
	cr_assert_eq(prom_sum(good, "h_count"), 4);
	cr_assert(isnan(prom_value(good, "nope")));
}

Test(metrics, checker_refuses_each_fault)
{
	static const char *const bad[] = {
		"x 1\n",                                                         /* no TYPE */
		"# TYPE x gauge\nx 1",                                           /* no final newline */
		"# TYPE x gauge\nx one\n",                                       /* value */
		"# TYPE x gauge\nx{a=1} 1\n",                                    /* unquoted label */
		"# TYPE x gauge\nx{a=\"1\" 1\n",                                 /* unterminated labels */
		"# TYPE x gauge\nx{a=\"\\q\"} 1\n",                              /* bad escape */
		"# TYPE x gauge\nx 1 trailing\n",                                /* trailing text */
		"# TYPE x gauge\n# TYPE x gauge\nx 1\n",                         /* TYPE twice */
		"# TYPE x wibble\nx 1\n",                                        /* unknown type */
		"# TYPE x counter\nx 1\n",                                       /* counter without _total */
		"# TYPE x gauge\n# TYPE y gauge\nx 1\ny 1\n",                    /* x not under its TYPE */
		"# TYPE x gauge\nx 1\n# TYPE y gauge\ny 1\nx 2\n",               /* x not contiguous */
		"# TYPE x gauge\n",                                              /* family without samples */
		"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\n",         /* no +Inf */
		"# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n", /* not cumulative */
		"# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
		"# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 1\n",       /* count != +Inf */
		"# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\n",                  /* no count */
		"# TYPE h histogram\nh_bucket 2\nh_count 2\n",                    /* bucket without le */
		"# TYPE h histogram\nh 2\n",                                      /* bare histogram sample */
		"# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
		"# TYPE g gauge\ng_bucket{le=\"1\"} 1\n",                         /* bucket of a gauge */
		"# TYPE h histogram\nh_bucket{le=\"0.1\"} 1\nh_bucket{le=\"1e-01\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
		"# TYPE 1x gauge\n1x 1\n",                                       /* bad name */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *e = prom_check(bad[i]);
		cr_assert_not_null(e, "fault %zu accepted:\n%s", i, bad[i]);
		free(e);
	}
}

static char *metrics(const char *ctl)
{
	cJSON *j = ctl_json(ctl, "{\"request\":\"metrics\"}");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "text");
	cr_assert(cJSON_IsString(t));
	char *text = strdup(t->valuestring);
	cJSON_Delete(j);
	char *e = prom_check(text);
	cr_assert_null(e, "%s\n%s", e, text);
	return text;
}

Test(metrics, follow_the_daemon)
{
	struct gd_daemon d;
	ctl_start(&d, NULL);
	char *m0 = metrics(d.ctl);
	cr_assert_eq(prom_value(m0, "garuda_clients"), 0);
	cr_assert_eq(prom_value(m0, "garuda_completions_total"), 0);
	cr_assert_eq(prom_sum(m0, "garuda_wake_latency_seconds_count"), 0);
	cr_assert_eq(prom_value(m0, "garuda_info{version=\"0.1.0\",event_loop=\"io_uring\"}") == 1 ||
			     prom_value(m0, "garuda_info{version=\"0.1.0\",event_loop=\"epoll\"}") == 1,
		     1, "garuda_info");
	free(m0);

	struct ctl_client c;
	struct gd_seg s;
	ctl_client_open(&c, d.sock);
	cr_assert_eq(ctl_segment_open(&c, 1, &s), 0);
	enum { N = 50 };
	for (int i = 1; i <= N; i++) {
		ctl_arm(&c, s.id, 0, (uint64_t)i, (uint64_t)i, GARUDA_FORM_DOORBELL);
		gd_store(&s, 0, (uint64_t)i);
	}
	cr_assert_eq(ctl_wait_status(d.ctl, "completions", N), N);
	char *m1 = metrics(d.ctl);
	cr_assert_eq(prom_value(m1, "garuda_clients"), 1);
	cr_assert_eq(prom_value(m1, "garuda_segments"), 1);
	cr_assert_eq(prom_value(m1, "garuda_completions_total"), N);
	cr_assert_eq(prom_value(m1, "garuda_arms_total"), N);
	cr_assert_eq(prom_value(m1, "garuda_readiness_total{form=\"doorbell\"}"), N);
	cr_assert_eq(prom_sum(m1, "garuda_wake_latency_seconds_count"), N);
	cr_assert_eq(prom_sum(m1, "garuda_scanner_completions_total"), N);
	cr_assert_geq(prom_sum(m1, "garuda_scanner_passes_total"), 1);
	cr_assert_geq(prom_sum(m1, "garuda_scanner_cpu_seconds_total"), 0);
	free(m1);

	gd_seg_unmap(&s);
	ctl_client_close(&c);
	cr_assert_eq(ctl_wait_status(d.ctl, "clients", 0), 0);
	cr_assert_eq(ctl_wait_status(d.ctl, "segments", 0), 0);
	char *m2 = metrics(d.ctl);
	cr_assert_eq(prom_value(m2, "garuda_clients"), 0);
	cr_assert_eq(prom_value(m2, "garuda_segments"), 0);
	cr_assert_eq(prom_value(m2, "garuda_completions_total"), N, "a counter went down");
	cr_assert_eq(prom_value(m2, "garuda_sessions_total"), 1);
	free(m2);
	ctl_stop(&d);
}

/* garuda_timer_lateness_seconds counts the scanners' timed sleeps that ran to their
 * time: none while nothing is armed (a park has no time), some once a wait that never
 * completes is on its backoff ladder; its JSON twin in "scanners" counts the same */
Test(metrics, timer_lateness_counts_timed_sleeps)
{
	struct gd_daemon d;
	ctl_start(&d, NULL);
	char *m0 = metrics(d.ctl);
	cr_assert_eq(prom_sum(m0, "garuda_timer_lateness_seconds_count"), 0, "parks are not timed sleeps");
	free(m0);
	struct ctl_client c;
	struct gd_seg s;
	ctl_client_open(&c, d.sock);
	cr_assert_eq(ctl_segment_open(&c, 1, &s), 0);
	ctl_arm(&c, s.id, 0, 1, 1, GARUDA_FORM_DOORBELL); /* its word stays 0 */
	/* the state, not a time: until the JSON twin counts 3 (the harness's hang deadline
	 * only catches a scanner that never sleeps); the family, read after, has them too */
	cr_assert_geq(gd_wait_scanner(d.ctl, "timer_lateness", 3), 3, "the overdue wait's ladder sleeps were counted");
	char *m = metrics(d.ctl);
	double n = prom_sum(m, "garuda_timer_lateness_seconds_count");
	cr_assert_geq(n, 3, "the family counts the sleeps the JSON counted");
	cr_assert_geq(prom_sum(m, "garuda_timer_lateness_seconds_sum"), 0);
	free(m);
	cr_assert_geq(gd_scanner_sum(d.ctl, "timer_lateness"), n,
		      "the JSON counts what the metrics counted, and any sleep since");
	gd_seg_unmap(&s);
	ctl_client_close(&c);
	ctl_stop(&d);
}
