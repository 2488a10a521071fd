/* util.c — see bench.h: timing, statistics, shared memory, futexes, children, /proc. */
#include "bench.h"

#include "uring_futex.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

void bench_fail(struct bench *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("garuda-bench: BROKEN RUN: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	b->failures++;
}

void bench_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("  .. ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static struct timespec to_ts(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull) };
}

void sleep_ns(uint64_t ns)
{
	struct timespec ts = to_ts(ns);
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

void sleep_until_ns(uint64_t abs_ns)
{
	struct timespec ts = to_ts(abs_ns);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t process_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* nearest-rank percentile of sorted samples */
static double pct(const uint64_t *s, size_t n, double p)
{
	if (!n)
		return NAN;
	size_t rank = (size_t)ceil(p / 100.0 * (double)n);
	if (rank < 1)
		rank = 1;
	return (double)s[rank - 1];
}

void lat_compute(uint64_t *samples, size_t n, struct lat_stats *out)
{
	qsort(samples, n, sizeof(*samples), cmp_u64);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += (double)samples[i];
	*out = (struct lat_stats){
		.n = n,
		.p50 = pct(samples, n, 50),
		.p99 = pct(samples, n, 99),
		.p999 = pct(samples, n, 99.9),
		.mean = n ? sum / (double)n : NAN,
		.max = n ? (double)samples[n - 1] : NAN,
	};
}

cJSON *lat_json(const struct lat_stats *s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "samples", (double)s->n);
	cJSON_AddNumberToObject(o, "p50_us", s->p50 / 1e3);
	cJSON_AddNumberToObject(o, "p99_us", s->p99 / 1e3);
	cJSON_AddNumberToObject(o, "p99_9_us", s->p999 / 1e3);
	cJSON_AddNumberToObject(o, "mean_us", s->mean / 1e3);
	cJSON_AddNumberToObject(o, "max_us", s->max / 1e3);
	return o;
}

void *shm_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void shm_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}

int futex_wait(uint32_t *addr, uint32_t val, uint64_t timeout_ns)
{
	struct timespec ts = to_ts(timeout_ns);
	long r = syscall(SYS_futex, addr, FUTEX_WAIT, val, timeout_ns ? &ts : NULL, NULL, 0);
	return r < 0 ? -errno : 0;
}

void futex_wake(uint32_t *addr, int n)
{
	syscall(SYS_futex, addr, FUTEX_WAKE, n, NULL, NULL, 0);
}

int futex_wait_ge(uint32_t *addr, uint32_t want, uint64_t timeout_ns)
{
	uint64_t deadline = now_ns() + timeout_ns;
	for (;;) {
		uint32_t v = __atomic_load_n(addr, __ATOMIC_ACQUIRE);
		if ((int32_t)(v - want) >= 0)
			return 0;
		uint64_t now = now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		futex_wait(addr, v, deadline - now);
	}
}

void futex_set(uint32_t *addr, uint32_t v)
{
	__atomic_store_n(addr, v, __ATOMIC_RELEASE);
	futex_wake(addr, INT32_MAX);
}

pid_t child_start(int (*fn)(void *arg), void *arg)
{
	pid_t parent = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(99);
		_exit(fn(arg));
	}
	return pid;
}

int child_wait(pid_t pid, unsigned timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int st;
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			return -1;
		if (now_ns() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		sleep_ns(1000000);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static uint64_t status_field(const char *text, const char *key)
{
	const char *p = strstr(text, key);
	if (!p)
		return 0;
	return strtoull(p + strlen(key), NULL, 10);
}

static ssize_t read_text(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	size_t n = fread(buf, 1, cap - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (ssize_t)n;
}

int proc_read(pid_t pid, struct proc_sample *out)
{
	char path[96], buf[4096];
	memset(out, 0, sizeof(*out));

	/* /proc/PID/stat: utime and stime are fields 14 and 15; comm may hold spaces */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	ssize_t n = read_text(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	char *p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	unsigned long long ut = 0, st = 0;
	/* after ") ": state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	 * cmajflt utime(14) stime(15) */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -EINVAL;
	/* the process's CPU clock is the scheduler's own sum, in ns (a quick row's ~40 ms
	 * of daemon CPU is only four 10 ms ticks, and ticks are sampled); the ticks only
	 * where that clock cannot be read */
	clockid_t clk;
	struct timespec ts;
	long tck = sysconf(_SC_CLK_TCK);
	if (clock_getcpuclockid(pid, &clk) == 0 && clock_gettime(clk, &ts) == 0)
		out->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	else
		out->cpu_ns = (ut + st) * (1000000000ull / (uint64_t)(tck > 0 ? tck : 100));

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((n = read_text(path, buf, sizeof(buf))) < 0)
		return (int)n;
	out->rss_kib = status_field(buf, "VmRSS:");

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char tp[128];
		snprintf(tp, sizeof(tp), "/proc/%d/task/%.20s/status", (int)pid, e->d_name);
		if (read_text(tp, buf, sizeof(buf)) < 0)
			continue;
		out->vol_ctxt += status_field(buf, "\nvoluntary_ctxt_switches:");
		out->nonvol_ctxt += status_field(buf, "nonvoluntary_ctxt_switches:");
		if (strncmp(buf, "Name:\tgaruda-scan", 17) != 0)
			continue;
		snprintf(tp, sizeof(tp), "/proc/%d/task/%.20s/schedstat", (int)pid, e->d_name);
		unsigned long long on_cpu;
		if (read_text(tp, buf, sizeof(buf)) > 0 && sscanf(buf, "%llu", &on_cpu) == 1)
			out->scan_ns += on_cpu;
	}
	closedir(d);
	return 0;
}

unsigned long raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return (unsigned long)rl.rlim_cur;
}

/* The doorbell awaited in an io_uring ring (IORING_OP_FUTEX_WAIT, Linux 6.7;
 * examples/uring_futex.h): one wait for `value`, at most timeout_ns. */
void uring_bell_wait(struct io_uring *ring, uint32_t *bell, uint32_t value, uint64_t timeout_ns)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return;
	uring_prep_futex_wait(sqe, bell, value);
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = { .tv_sec = (long long)(timeout_ns / 1000000000ull),
					.tv_nsec = (long long)(timeout_ns % 1000000000ull) };
	if (io_uring_submit_and_wait_timeout(ring, &cqe, 1, &ts, NULL) >= 0 || io_uring_peek_cqe(ring, &cqe) == 0) {
		io_uring_cqe_seen(ring, cqe);
		return;
	}
	/* timed out: take the wait back before the next one */
	struct io_uring_sqe *c = io_uring_get_sqe(ring);
	if (c) {
		io_uring_prep_cancel64(c, 0, IORING_ASYNC_CANCEL_ANY);
		io_uring_submit_and_wait(ring, 2);
		while (io_uring_peek_cqe(ring, &cqe) == 0)
			io_uring_cqe_seen(ring, cqe);
	}
}


bool bench_list_has(const char *list, const char *item)
{
	size_t n = strlen(item);
	for (const char *p = list; (p = strstr(p, item)); p += n)
		if ((p == list || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
			return true;
	return false;
}
