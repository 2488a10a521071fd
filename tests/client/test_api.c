/* test_api.c — libgaruda without a daemon: argument checks (-EINVAL) of every
 * function, connect errors, error text, and that the public header agrees with the
 * sources it copies (the error registry). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common.h"
#include "registry_peek.h"

TestSuite(api, .init = fdcheck_begin, .fini = fdcheck_end, .timeout = 30);

Test(api, version)
{
	cr_assert_str_eq(garuda_version(), "0.1.0");
	cr_assert_eq(GARUDA_VERSION_MAJOR, 0);
	cr_assert_eq(GARUDA_VERSION_MINOR, 1);
}

/* every code of the public header, with its registry name */
#define CODES(X)                                                                              \
	X(PROTOCOL) X(TOO_SHORT) X(TOO_LONG) X(BAD_LENGTH) X(UNKNOWN_TYPE) X(BAD_VERSION)     \
	X(FD_COUNT) X(SLOT_RANGE) X(RESERVED_SET) X(BAD_VALUE) X(UNEXPECTED) X(NO_SEGMENT)    \
	X(BAD_FD) X(NOT_BOUND) X(ALREADY_BOUND) X(NOT_ARMED) X(QUOTA) X(NO_MEMLOCK)           \
	X(BAD_SEGMENT) X(SLOW_PEER) X(TIMEOUT) X(DISCONNECTED) X(BAD_PLAN) X(STREAM_FAULT)    \
	X(NO_DRIVER) X(DRIVER_TOO_OLD) X(UNSUPPORTED) X(REGISTER_FAILED) X(BAD_JSON)          \
	X(UNKNOWN_REQUEST) X(BAD_ARGUMENT) X(ACCESS_DENIED) X(NO_CLIENT) X(BUSY) X(CLOSED)     \
	X(FALLBACK_REACTOR)

Test(api, public_codes_match_the_registry)
{
	static const struct {
		int code;
		const char *name;
	} pub[] = {
#define ROW(n) { GARUDA_E_##n, #n },
		CODES(ROW)
#undef ROW
	};
	int n = (int)(sizeof(pub) / sizeof(pub[0]));
	cr_assert_eq(n, peek_registry_count(), "public header has %d codes, the registry %d", n,
		     peek_registry_count());
	for (int i = 0; i < n; i++) {
		const char *reg = peek_registry_name(pub[i].code);
		cr_assert_not_null(reg, "GARUDA_E_%s = %d is not in the registry", pub[i].name,
				   pub[i].code);
		cr_assert_str_eq(reg, pub[i].name, "code %d is %s in the registry", pub[i].code, reg);
		cr_assert_str_neq(garuda_strerror(-pub[i].code), "unknown error");
		cr_assert_str_eq(garuda_strerror(-pub[i].code), garuda_strerror(pub[i].code));
	}
}

Test(api, strerror_any_value)
{
	cr_assert_str_eq(garuda_strerror(-ENOENT), strerror(ENOENT));
	cr_assert_str_eq(garuda_strerror(-GARUDA_E_TIMEOUT), "timed out");
	cr_assert_str_eq(garuda_strerror(-999999), "unknown error");
	cr_assert_str_eq(garuda_strerror(0), "success"); /* issue 30, item 16: was "unknown error" */
}

Test(api, null_arguments_are_einval)
{
	struct garuda_client *c = (void *)1;
	struct garuda_seg *seg = (void *)1;
	struct garuda_stream *s = (void *)1;
	uint64_t seq;
	fails(garuda_connect(NULL), -EINVAL);
	fails(garuda_connect_to(NULL, &c), -EINVAL);
	cr_assert_null(c);
	fails(garuda_connect_to("", &c), -EINVAL);
	fails(garuda_connect_to("/tmp/x", NULL), -EINVAL);
	garuda_disconnect(NULL);
	fails(garuda_client_connected(NULL), -EINVAL);
	cr_assert_eq(garuda_client_session(NULL), 0);
	cr_assert_eq(garuda_client_reconnects(NULL), 0);
	fails(garuda_client_fd(NULL), -EINVAL);
	fails(garuda_dispatch(NULL), -EINVAL);
	fails(garuda_segment_open(NULL, "host", 0, 1, &seg), -EINVAL);
	cr_assert_null(seg);
	fails(garuda_segment_close(NULL), 0);
	fails(garuda_segment_numa_node(NULL), -EINVAL);
	cr_assert_eq(garuda_segment_free_words(NULL), 0);
	fails(garuda_stream_new(NULL, NULL, GARUDA_READINESS_POLL, &s), -EINVAL);
	cr_assert_null(s);
	garuda_stream_free(NULL);
	fails(garuda_stream_set_wait(NULL, 0, 1000000), -EINVAL);
	fails(garuda_stream_set_callback(NULL, NULL, NULL), -EINVAL);
	fails(garuda_stream_signal(NULL, &seq), -EINVAL);
	cr_assert_eq(garuda_stream_last(NULL), 0);
	cr_assert_eq(garuda_stream_value(NULL), 0);
	cr_assert(!garuda_stream_reached(NULL, 1));
	fails(garuda_stream_wait(NULL, 1, 0), -EINVAL);
	fails(garuda_stream_fd(NULL), -EINVAL);
	fails(garuda_stream_drain(NULL, &seq), -EINVAL);
	fails(garuda_stream_query(NULL), -EINVAL);
}

Test(api, connect_nothing_there_is_enoent)
{
	struct garuda_client *c;
	fails(garuda_connect_to("/nonexistent/garuda/g.sock", &c), -ENOENT);
	/* garuda_connect reads GARUDA_SOCKET */
	setenv("GARUDA_SOCKET", "/nonexistent/garuda/env.sock", 1);
	fails(garuda_connect(&c), -ENOENT);
	unsetenv("GARUDA_SOCKET");
}

Test(api, connect_path_too_long_is_einval)
{
	char path[300];
	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	struct garuda_client *c;
	fails(garuda_connect_to(path, &c), -EINVAL);
}

Test(api, connect_not_listening_is_econnrefused)
{
	char dir[] = "/tmp/garuda-api.XXXXXX", path[128];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s", dir);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	strcpy(sa.sun_path, path);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	struct garuda_client *c;
	fails(garuda_connect_to(path, &c), -ECONNREFUSED);
	close(fd);
	unlink(path);
	rmdir(dir);
}
