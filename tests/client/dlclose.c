/* dlclose.c — libgaruda loaded with dlopen and closed with dlclose while a thread that
 * waited with a +predict plan lives on: that thread's exit runs the library's
 * thread-specific destructor (client/wait.c), which must still be there (libgaruda is
 * linked -z nodelete; it crashed with SIGSEGV in __nptl_deallocate_tsd). A program of
 * its own, not a Criterion test: those link libgaruda, and a library already loaded is
 * never unloaded by dlclose. No daemon: GARUDA_FALLBACK=reactor at a socket path where
 * nothing listens, so the client runs on its in-process reactor.
 * Exit 0, or 1 with why (a crash fails the test by its signal). argv[1]: libgaruda. */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* open fds (the directory's own included, the same both times) */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void *lib;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int phase, waited = 1;
static void *client, *hs;

#define SYM(name) void *name = dlsym(lib, #name)

static void *worker(void *arg)
{
	(void)arg;
	SYM(garuda_connect_to);
	SYM(garuda_segment_open);
	SYM(garuda_stream_new);
	SYM(garuda_stream_set_plan);
	SYM(garuda_stream_signal);
	SYM(garuda_stream_wait);
	SYM(garuda_host_stream_new);
	SYM(garuda_host_stream_enqueue_work);
	void *seg, *s;
	uint64_t q;
	if (((int (*)(const void *, void **))garuda_host_stream_new)(NULL, &hs) == 0 &&
	    ((int (*)(const char *, void **))garuda_connect_to)("/nonexistent/garuda.sock", &client) >= 0 &&
	    ((int (*)(void *, const char *, int, uint32_t, void **))garuda_segment_open)(client, "host", 0, 1, &seg) == 0 &&
	    ((int (*)(void *, void *, int, void **))garuda_stream_new)(seg, hs, 1, &s) == 0 &&
	    ((int (*)(void *, const char *))garuda_stream_set_plan)(
		    s, "flag:park_us=100,backstop_us=1000+predict:margin_us=100,min_sleep_us=20,"
		       "max_sleep_us=1000,window=16") == 0 &&
	    ((int (*)(void *, uint64_t))garuda_host_stream_enqueue_work)(hs, 5000000) == 0 &&
	    ((int (*)(void *, uint64_t *))garuda_stream_signal)(s, &q) == 0)
		waited = ((int (*)(void *, uint64_t, int64_t))garuda_stream_wait)(s, q, 10000000000ll);
	pthread_mutex_lock(&mu);
	phase = 1;
	pthread_cond_broadcast(&cv);
	while (phase < 2)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return NULL; /* its thread-specific data's destructor runs now */
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	setenv("GARUDA_FALLBACK", "reactor", 1);
	setenv("GARUDA_CONNECT_TIMEOUT", "0", 1);
	int fds = count_fds();
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
		return 1;
	}
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	pthread_mutex_lock(&mu);
	while (phase < 1)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	if (waited != 0) {
		fprintf(stderr, "the +predict wait returned %d\n", waited);
		return 1;
	}
	SYM(garuda_disconnect);
	SYM(garuda_host_stream_free);
	((void (*)(void *))garuda_disconnect)(client);
	((void (*)(void *))garuda_host_stream_free)(hs);
	if (dlclose(lib) != 0) {
		fprintf(stderr, "dlclose: %s\n", dlerror());
		return 1;
	}
	pthread_mutex_lock(&mu);
	phase = 2;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(t, NULL);
	if (count_fds() != fds) {
		fprintf(stderr, "fds: %d before, %d after\n", fds, count_fds());
		return 1;
	}
	printf("dlclose with a +predict waiter's thread alive: its exit ran cleanly\n");
	return 0;
}
