/* test_cli.c — garctl's own words (issue 30, item 16): pretty JSON indented by two
 * spaces, as people and jq print it, not by tabs; a missing argument named, with what
 * it is and the command's usage. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "ctl_harness.h"

TestSuite(garctl_cli, .init = ctl_test_init, .fini = ctl_test_fini, .timeout = 120);

Test(garctl_cli, pretty_json_is_indented_by_two_spaces)
{
	struct gd_daemon d;
	ctl_start(&d, NULL);
	char sock[160];
	snprintf(sock, sizeof(sock), "--socket=%s", d.ctl);
	const char *args[] = { sock, "--no-pager", "--json=pretty", "status", NULL };
	struct ctl_run r;
	ctl_garctl(&r, args);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strchr(r.out, '\t'), "a tab in pretty JSON:\n%s", r.out);
	cr_assert_not_null(strstr(r.out, "{\n  \"version\": 1,\n"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "\n  \"readiness\": {\n    \""), "%s", r.out); /* nested: 4 */
	cJSON_Delete(ctl_run_json(&r)); /* still JSON */
	ctl_run_free(&r);
	ctl_stop(&d);
}

/* no daemon needed: usage is checked before connecting */
Test(garctl_cli, a_missing_argument_is_named_with_the_usage)
{
	static const char *const cases[][4] = {
		{ "segments", NULL, "missing argument CLIENT (a client id: see garctl clients)",
		  "Usage: garctl [OPTIONS] segments CLIENT\n" },
		{ "lines", NULL, "missing argument CLIENT", "Usage: garctl [OPTIONS] lines CLIENT SEGMENT\n" },
		{ "lines", "1", "missing argument SEGMENT (a segment id: see garctl segments CLIENT)",
		  "Usage: garctl [OPTIONS] lines CLIENT SEGMENT\n" },
		{ "points", NULL, "missing argument CLIENT", "Usage: garctl [OPTIONS] points CLIENT\n" },
		{ "disconnect", NULL, "missing argument CLIENT", "Usage: garctl [OPTIONS] disconnect CLIENT\n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[] = { "--socket=/nonexistent/garuda/control.sock", cases[i][0], cases[i][1], NULL };
		struct ctl_run r;
		ctl_garctl(&r, args);
		cr_assert_eq(r.status, 2, "%s: exit %d, %s", cases[i][0], r.status, r.err);
		cr_assert_not_null(strstr(r.err, cases[i][2]), "%s", r.err);
		cr_assert_not_null(strstr(r.err, cases[i][3]), "%s", r.err);
		ctl_run_free(&r);
	}
}
