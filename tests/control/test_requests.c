/* test_requests.c — the control socket's request layer, raw (no garctl): each
 * malformed-request class (an empty datagram and a string holding U+0000 among them)
 * gets its registry code and the connection carries on; names an error quotes stay
 * valid UTF-8;
 * argument checks; the 4096-byte limit; paging of long lists (start/next), with
 * garctl joining the pages; 64-bit values as exact decimal strings. */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl_harness.h"

TestSuite(requests, .init = ctl_test_init, .fini = ctl_test_fini, .timeout = 240);

/* A control connection kept open across requests. */
static int ctl_connect(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0, "connect %s: %s", path, strerror(errno));
	return fd;
}

static cJSON *exchange(int fd, const void *req, size_t len)
{
	cr_assert_eq(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len, "send: %s", strerror(errno));
	struct pollfd p = { .fd = fd, .events = POLLIN };
	cr_assert_eq(poll(&p, 1, CTL_DEADLINE_MS), 1, "no reply");
	ssize_t n = recv(fd, NULL, 0, MSG_PEEK | MSG_TRUNC);
	cr_assert_gt(n, 0, "the daemon closed the control connection");
	char *buf = calloc(1, (size_t)n + 1);
	cr_assert_eq(recv(fd, buf, (size_t)n, 0), n);
	cJSON *j = cJSON_Parse(buf);
	cr_assert(cJSON_IsObject(j), "reply is not a JSON object: %s", buf);
	free(buf);
	return j;
}

static cJSON *exchange_s(int fd, const char *req)
{
	return exchange(fd, req, strlen(req));
}

struct bad {
	const char *what;
	const char *req;
	int code;
};

Test(requests, each_malformed_class_gets_its_code)
{
	struct gd_daemon d;
	ctl_start(&d, NULL);
	static const struct bad cases[] = {
		{ "not JSON", "{", GARUDA_E_BAD_JSON },
		{ "garbage", "status please", GARUDA_E_BAD_JSON },
		{ "trailing text", "{\"request\":\"status\"} x", GARUDA_E_BAD_JSON },
		{ "two objects", "{\"request\":\"status\"}{\"request\":\"status\"}", GARUDA_E_BAD_JSON },
		{ "array", "[\"status\"]", GARUDA_E_BAD_JSON },
		{ "string", "\"status\"", GARUDA_E_BAD_JSON },
		{ "number", "42", GARUDA_E_BAD_JSON },
		{ "null", "null", GARUDA_E_BAD_JSON },
		{ "no request key", "{}", GARUDA_E_BAD_ARGUMENT },
		{ "request not a string", "{\"request\":1}", GARUDA_E_BAD_ARGUMENT },
		{ "request null", "{\"request\":null}", GARUDA_E_BAD_ARGUMENT },
		{ "unknown request", "{\"request\":\"frobnicate\"}", GARUDA_E_UNKNOWN_REQUEST },
		{ "request case", "{\"request\":\"STATUS\"}", GARUDA_E_UNKNOWN_REQUEST },
		{ "unknown argument", "{\"request\":\"status\",\"verbose\":true}", GARUDA_E_BAD_ARGUMENT },
		{ "duplicate key", "{\"request\":\"status\",\"request\":\"clients\"}", GARUDA_E_BAD_ARGUMENT },
		{ "missing client", "{\"request\":\"segments\"}", GARUDA_E_BAD_ARGUMENT },
		{ "client as string", "{\"request\":\"segments\",\"client\":\"1\"}", GARUDA_E_BAD_ARGUMENT },
		{ "client negative", "{\"request\":\"segments\",\"client\":-1}", GARUDA_E_BAD_ARGUMENT },
		{ "client zero", "{\"request\":\"disconnect\",\"client\":0}", GARUDA_E_BAD_ARGUMENT },
		{ "client fraction", "{\"request\":\"segments\",\"client\":1.5}", GARUDA_E_BAD_ARGUMENT },
		{ "client huge", "{\"request\":\"segments\",\"client\":1e300}", GARUDA_E_BAD_ARGUMENT },
		{ "client bool", "{\"request\":\"disconnect\",\"client\":true}", GARUDA_E_BAD_ARGUMENT },
		{ "segment missing", "{\"request\":\"lines\",\"client\":1}", GARUDA_E_BAD_ARGUMENT },
		{ "segment too big", "{\"request\":\"lines\",\"client\":1,\"segment\":4294967296}", GARUDA_E_BAD_ARGUMENT },
		{ "count zero", "{\"request\":\"lines\",\"client\":1,\"segment\":1,\"count\":0}", GARUDA_E_BAD_ARGUMENT },
		{ "start as array", "{\"request\":\"clients\",\"start\":[1]}", GARUDA_E_BAD_ARGUMENT },
		{ "level as number", "{\"request\":\"log_level\",\"level\":7}", GARUDA_E_BAD_ARGUMENT },
		{ "unknown level", "{\"request\":\"log_level\",\"level\":\"loud\"}", GARUDA_E_BAD_ARGUMENT },
		{ "no such client", "{\"request\":\"segments\",\"client\":424242}", GARUDA_E_NO_CLIENT },
		{ "disconnect no client", "{\"request\":\"disconnect\",\"client\":424242}", GARUDA_E_NO_CLIENT },
		{ "lines no client", "{\"request\":\"lines\",\"client\":424242,\"segment\":1}", GARUDA_E_NO_CLIENT },
	};
	int fd = ctl_connect(d.ctl);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *j = exchange_s(fd, cases[i].req);
		ctl_assert_error(j, cases[i].code, cases[i].what);
		cJSON_Delete(j);
	}
	/* NUL inside, deep nesting: still errors, never a crash */
	static const char nul[] = "{\"request\":\"status\"}\0";
	cJSON *j = exchange(fd, nul, sizeof(nul) - 1 + 1);
	ctl_assert_error(j, GARUDA_E_BAD_JSON, "trailing NUL");
	cJSON_Delete(j);
	char deep[4096];
	memset(deep, '[', 2000);
	memset(deep + 2000, ']', 2000);
	j = exchange(fd, deep, 4000);
	ctl_assert_error(j, GARUDA_E_BAD_JSON, "nesting 2000 deep");
	cJSON_Delete(j);

	/* the same connection still works */
	j = exchange_s(fd, "{\"request\":\"status\"}");
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(j, "error"));
	cr_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, "clients")));
	cJSON_Delete(j);
	close(fd);
	ctl_stop(&d);
}

/* An empty datagram is a request like any other (BAD_JSON), not the end of the
 * connection: on SOCK_SEQPACKET recv() returns 0 for both, and the connection stays
 * open after an error (garctl(1)). */
Test(requests, an_empty_datagram_is_answered_and_the_connection_stays)
{
	struct gd_daemon d;
	ctl_start(&d, NULL);
	int fd = ctl_connect(d.ctl);
	for (int i = 0; i < 2; i++) {
		cJSON *j = exchange(fd, "", 0);
		ctl_assert_error(j, GARUDA_E_BAD_JSON, "an empty datagram");
		cJSON_Delete(j);
	}
	cJSON *j = exchange_s(fd, "{\"request\":\"status\"}");
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(j, "error"));
	cJSON_Delete(j);
	close(fd);
	ctl_stop(&d);
}

/* U+0000 in a string (the escape \u0000, or a raw NUL byte inside the string) would
 * end cJSON's C string there: "debug\u0000x" would set the level debug, and a name
 * would be taken for its start. Refused as BAD_ARGUMENT; nothing is done. */
Test(requests, a_string_holding_nul_is_refused)
{
	struct gd_daemon d;
	ctl_start(&d, NULL);
	int fd = ctl_connect(d.ctl);
	static const char *const reqs[] = {
		"{\"request\":\"log_level\",\"level\":\"debug\\u0000x\"}",
		"{\"request\":\"sta\\u0000tus\"}",
		"{\"request\":\"status\",\"\\u0000\":1}",
	};
	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		cJSON *j = exchange_s(fd, reqs[i]);
		ctl_assert_error(j, GARUDA_E_BAD_ARGUMENT, reqs[i]);
		const char *msg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "error"),
								   "message")->valuestring;
		cr_assert_not_null(strstr(msg, "U+0000"), "%s: %s", reqs[i], msg);
		cJSON_Delete(j);
	}
	static const char raw[] = "{\"request\":\"log_level\",\"level\":\"debug\0x\"}";
	cJSON *j = exchange(fd, raw, sizeof(raw) - 1);
	ctl_assert_error(j, GARUDA_E_BAD_ARGUMENT, "a raw NUL inside a string");
	cJSON_Delete(j);
	/* an escaped backslash before u0000 is no NUL */
	j = exchange_s(fd, "{\"request\":\"log_level\",\"level\":\"\\\\u0000\"}");
	ctl_assert_error(j, GARUDA_E_BAD_ARGUMENT, "level \\u0000");
	const char *msg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "error"),
							   "message")->valuestring;
	cr_assert_not_null(strstr(msg, "not \"\\\\u0000\""), "%s", msg); /* its backslash as \\ */
	cJSON_Delete(j);
	j = exchange_s(fd, "{\"request\":\"log_level\"}");
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "log_level")->valuestring, "info",
			 "a refused request changed the log level");
	cJSON_Delete(j);
	close(fd);
	ctl_stop(&d);
}

/* Names a request echoes in its error (the request, an argument) reach the reply as
 * valid UTF-8: a byte that is not UTF-8 or a control byte as \xHH, a backslash as
 * \\, and a long name cut at a character, not inside one. */
Test(requests, echoed_names_are_valid_utf8)
{
	struct gd_daemon d;
	ctl_start(&d, NULL);
	char cut[160];
	snprintf(cut, sizeof(cut), "{\"request\":\"%s\xc3\xa9\"}",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"); /* 63 + a 2-byte é */
	const struct {
		const char *req, *message;
	} cases[] = {
		{ "{\"request\":\"st\xff\xfe" "atus\"}", "unknown request \"st\\xFF\\xFEatus\"" },
		{ "{\"request\":\"status\",\"\xff\\u001b[31m\\\\\":1}", /* ESC, escaped: raw is BAD_JSON */
		  "request \"status\" takes no argument \"\\xFF\\x1B[31m\\\\\"" },
		{ "{\"request\":\"status\",\"\xe2\x82\":1}", "takes no argument \"\\xE2\\x82\"" }, /* cut short */
		{ "{\"request\":\"log_level\",\"level\":\"\xc0\xaf\"}", "not \"\\xC0\\xAF\"" },
		{ cut, "unknown request \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = ctl_raw(d.ctl, cases[i].req, strlen(cases[i].req));
		cr_assert(ctl_valid_utf8(text, strlen(text)), "case %zu: not UTF-8: %s", i, text);
		cJSON *j = cJSON_Parse(text);
		cr_assert_not_null(j, "case %zu: %s", i, text);
		const char *msg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "error"),
								   "message")->valuestring;
		cr_assert_not_null(strstr(msg, cases[i].message), "case %zu: \"%s\" lacks \"%s\"", i, msg,
				   cases[i].message);
		cJSON_Delete(j);
		free(text);
	}
	ctl_stop(&d);
}

Test(requests, size_limit)
{
	struct gd_daemon d;
	ctl_start(&d, NULL);
	int fd = ctl_connect(d.ctl);
	/* exactly 4096 bytes: a valid request padded with blanks */
	char buf[8192];
	memset(buf, ' ', sizeof(buf));
	const char *req = "{\"request\":\"status\"}";
	memcpy(buf, req, strlen(req));
	cJSON *j = exchange(fd, buf, 4096);
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(j, "error"), "a 4096-byte request was refused");
	cJSON_Delete(j);
	/* 4097 and more: TOO_LONG, whatever the content */
	j = exchange(fd, buf, 4097);
	ctl_assert_error(j, GARUDA_E_TOO_LONG, "4097 bytes");
	cJSON_Delete(j);
	memset(buf, 'x', sizeof(buf));
	j = exchange(fd, buf, sizeof(buf));
	ctl_assert_error(j, GARUDA_E_TOO_LONG, "8192 bytes of garbage");
	cJSON_Delete(j);
	j = exchange_s(fd, "{\"request\":\"clients\"}");
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(j, "error"));
	cJSON_Delete(j);
	close(fd);
	ctl_stop(&d);
}

Test(requests, every_reply_carries_version)
{
	struct ctl_fixture f;
	ctl_fixture_up(&f);
	char req[256];
	const char *fmts[] = {
		"{\"request\":\"status\"}", "{\"request\":\"clients\"}", "{\"request\":\"segments\",\"client\":%llu}",
		"{\"request\":\"lines\",\"client\":%llu,\"segment\":1}", "{\"request\":\"scanners\"}",
		"{\"request\":\"config\"}", "{\"request\":\"metrics\"}", "{\"request\":\"log_level\"}",
		"{\"request\":\"reload\"}",
	};
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		snprintf(req, sizeof(req), fmts[i], (unsigned long long)f.a.session_id);
		cJSON *j = ctl_json(f.d.ctl, req); /* asserts "version": 1 */
		cr_assert_null(cJSON_GetObjectItemCaseSensitive(j, "error"), "%s failed", req);
		/* keys are lower_snake_case */
		const cJSON *it;
		cJSON_ArrayForEach(it, j)
			cr_assert_eq(strspn(it->string, "abcdefghijklmnopqrstuvwxyz_0123456789"), strlen(it->string),
				     "key %s of %s", it->string, req);
		cJSON_Delete(j);
	}
	ctl_fixture_down(&f);
}

Test(requests, lines_pages_and_garctl_joins_them)
{
	struct gd_daemon d;
	ctl_start(&d, NULL);
	struct ctl_client c;
	struct gd_seg s;
	ctl_client_open(&c, d.sock);
	cr_assert_eq(ctl_segment_open(&c, 4096, &s), 0);
	for (uint32_t i = 0; i < 4096 * 8; i++)
		gd_store(&s, i, 0x8000000000000000ull + i);
	char req[256];
	snprintf(req, sizeof(req), "{\"request\":\"lines\",\"client\":%llu,\"segment\":%u}",
		 (unsigned long long)c.session_id, s.id);
	cJSON *j = ctl_json(d.ctl, req);
	const cJSON *lines = cJSON_GetObjectItemCaseSensitive(j, "lines");
	const cJSON *next = cJSON_GetObjectItemCaseSensitive(j, "next");
	int n = cJSON_GetArraySize(lines);
	cr_assert(n > 0 && n < 4096, "one page holds %d of 4096 lines", n);
	cr_assert(cJSON_IsNumber(next) && next->valuedouble == n, "next is not the first line left out");
	cJSON_Delete(j);

	snprintf(req, sizeof(req), "{\"request\":\"lines\",\"client\":%llu,\"segment\":%u,\"start\":10,\"count\":2}",
		 (unsigned long long)c.session_id, s.id);
	j = ctl_json(d.ctl, req);
	lines = cJSON_GetObjectItemCaseSensitive(j, "lines");
	cr_assert_eq(cJSON_GetArraySize(lines), 2);
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(lines, 0), "line")->valuedouble, 10);
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(j, "next")->valuedouble, 12);
	cJSON_Delete(j);
	snprintf(req, sizeof(req), "{\"request\":\"lines\",\"client\":%llu,\"segment\":%u,\"start\":4095}",
		 (unsigned long long)c.session_id, s.id);
	j = ctl_json(d.ctl, req);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "lines")), 1);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "next")));
	cJSON_Delete(j);
	snprintf(req, sizeof(req), "{\"request\":\"lines\",\"client\":%llu,\"segment\":%u,\"start\":4096}",
		 (unsigned long long)c.session_id, s.id);
	j = ctl_json(d.ctl, req);
	ctl_assert_error(j, GARUDA_E_BAD_ARGUMENT, "start beyond the segment");
	cJSON_Delete(j);

	/* garctl asks for every page and prints one array */
	char sock[160], cid[24], sid[24];
	snprintf(sock, sizeof(sock), "--socket=%s", d.ctl);
	snprintf(cid, sizeof(cid), "%llu", (unsigned long long)c.session_id);
	snprintf(sid, sizeof(sid), "%u", s.id);
	const char *args[] = { sock, "-j", "lines", cid, sid, NULL };
	struct ctl_run r;
	ctl_garctl(&r, args);
	j = ctl_run_json(&r);
	lines = cJSON_GetObjectItemCaseSensitive(j, "lines");
	cr_assert_eq(cJSON_GetArraySize(lines), 4096);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "next")));
	int l = 0;
	const cJSON *line;
	cJSON_ArrayForEach(line, lines)
	{
		cr_assert_eq(cJSON_GetObjectItemCaseSensitive(line, "line")->valuedouble, l, "lines out of order");
		const cJSON *w7 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(line, "words"), 7);
		char want[24];
		snprintf(want, sizeof(want), "%llu", 0x8000000000000000ull + (unsigned long long)l * 8 + 7);
		cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(w7, "value")->valuestring, want);
		l++;
	}
	cJSON_Delete(j);
	ctl_run_free(&r);

	/* and the table has one row per word */
	const char *args2[] = { sock, "--no-legend", "lines", cid, sid, NULL };
	ctl_garctl(&r, args2);
	cr_assert_eq(r.status, 0);
	size_t rows = 0;
	for (const char *p = r.out; (p = strchr(p, '\n')); p++)
		rows++;
	cr_assert_eq(rows, 4096 * 8);
	ctl_run_free(&r);

	gd_seg_unmap(&s);
	ctl_client_close(&c);
	ctl_stop(&d);
}

Test(requests, clients_start_and_segments_start)
{
	struct ctl_fixture f;
	ctl_fixture_up(&f);
	char req[256];
	snprintf(req, sizeof(req), "{\"request\":\"clients\",\"start\":%llu}", (unsigned long long)f.b.session_id);
	cJSON *j = ctl_json(f.d.ctl, req);
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "clients");
	cr_assert_eq(cJSON_GetArraySize(list), 1);
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, 0), "id")->valuedouble, f.b.session_id);
	cJSON_Delete(j);
	snprintf(req, sizeof(req), "{\"request\":\"segments\",\"client\":%llu,\"start\":%u}",
		 (unsigned long long)f.a.session_id, f.a2.id);
	j = ctl_json(f.d.ctl, req);
	list = cJSON_GetObjectItemCaseSensitive(j, "segments");
	cr_assert_eq(cJSON_GetArraySize(list), 1);
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, 0), "id")->valuedouble, f.a2.id);
	cJSON_Delete(j);
	ctl_fixture_down(&f);
}

/* garudad raises its soft RLIMIT_NOFILE to the hard one, and warns (status
 * "warnings") when that is below what SERVICE_NOFILE_UIDS uids at their full quotas
 * hold: past it, requests that pass an fd are refused with EMFILE. */
Test(requests, a_low_nofile_limit_is_raised_and_warned_of)
{
	/* garudad started under prlimit (util-linux): soft 1024, hard 8192 */
	const char *real = getenv("GARUDAD");
	cr_assert_not_null(real, "GARUDAD is not set");
	if (access("/usr/bin/prlimit", X_OK) != 0)
		cr_skip_test("no /usr/bin/prlimit (util-linux) to start garudad under");
	/* the wrapper is a program: its directory ($TMPDIR, else /tmp) must allow exec */
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	char dir[PATH_MAX], wrapper[PATH_MAX + 16];
	cr_assert_lt((size_t)snprintf(dir, sizeof(dir), "%s/garuda-nofile-XXXXXX", tmp), sizeof(dir));
	cr_assert_not_null(mkdtemp(dir), "mkdtemp under %s: %s", tmp, strerror(errno));
	struct statvfs vfs;
	if (statvfs(dir, &vfs) == 0 && (vfs.f_flag & ST_NOEXEC)) {
		rmdir(dir);
		cr_skip_test("%s is mounted noexec: no place for the garudad wrapper (set TMPDIR)", tmp);
	}
	snprintf(wrapper, sizeof(wrapper), "%s/garudad", dir);
	FILE *f = fopen(wrapper, "we");
	cr_assert_not_null(f);
	fprintf(f, "#!/bin/sh\nexec /usr/bin/prlimit --nofile=1024:8192 -- '%s' \"$@\"\n", real);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chmod(wrapper, 0755), 0);
	static const char *const args[] = { "--scanners=2", NULL };
	struct gd_daemon d = { 0 };
	gd_start(&d, &(struct gd_opts){ .garudad = wrapper, .args = args });
	cJSON *j = ctl_json(d.ctl, "{\"request\":\"status\"}");
	const cJSON *w, *ws = cJSON_GetObjectItemCaseSensitive(j, "warnings");
	bool seen = false;
	cJSON_ArrayForEach(w, ws)
		seen |= cJSON_IsString(w) && strstr(w->valuestring, "RLIMIT_NOFILE is 8192,") &&
			strstr(w->valuestring, "LimitNOFILE");
	char *text = cJSON_PrintUnformatted(ws);
	cr_assert(seen, "no warning of RLIMIT_NOFILE 8192 (the soft 1024 raised to the hard): %s", text);
	free(text);
	cJSON_Delete(j);
	gd_stop(&d);
	unlink(wrapper);
	rmdir(dir);
}

Test(requests, many_clients_page)
{
	struct gd_daemon d;
	ctl_start(&d, "{\"quota\":{\"uid\":{\"segments\":1024,\"connections\":1024},"
			   "\"cgroup\":{\"segments\":1024,\"connections\":1024}}}");
	enum { N = 400 }; /* ~400 bytes each: more than one 64 KiB page */
	static struct ctl_client c[N];
	for (int i = 0; i < N; i++)
		ctl_client_open(&c[i], d.sock);
	cJSON *j = ctl_json(d.ctl, "{\"request\":\"clients\"}");
	const cJSON *next = cJSON_GetObjectItemCaseSensitive(j, "next");
	int first = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "clients"));
	cr_assert(first < N && cJSON_IsNumber(next), "%d clients fit one page", N);
	cJSON_Delete(j);
	char sock[160];
	snprintf(sock, sizeof(sock), "--socket=%s", d.ctl);
	const char *args[] = { sock, "-j", "clients", NULL };
	struct ctl_run r;
	ctl_garctl(&r, args);
	j = ctl_run_json(&r);
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(j, "clients");
	cr_assert_eq(cJSON_GetArraySize(list), N);
	double prev = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, list)
	{
		double id = cJSON_GetObjectItemCaseSensitive(it, "id")->valuedouble;
		cr_assert_gt(id, prev, "clients not in id order across pages");
		prev = id;
	}
	cJSON_Delete(j);
	ctl_run_free(&r);
	for (int i = 0; i < N; i++)
		ctl_client_close(&c[i]);
	cr_assert_eq(ctl_wait_status(d.ctl, "clients", 0), 0);
	ctl_stop(&d);
}
