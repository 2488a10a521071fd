/* fake_device.c — fake streams and the fake host-range registry; see fake_device.h.
 * FAKE: test scaffolding only. Promises: operations run in FIFO order on one thread
 * per stream; stores are release stores; a fault discards what is queued; destroy
 * joins the thread. The registry is one mutex-protected table per fake library. */
#include "fake_device.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum op_kind { OP_SLEEP, OP_GATE, OP_WRITE, OP_FAULT };

struct op {
	struct op *next;
	enum op_kind kind;
	uint64_t value;
	uint64_t *word;
	const int *gate;
};

struct fake_stream {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct op *head, *tail;
	bool busy, faulted, stop;
	pthread_t thread;
};

static void nap_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void *stream_main(void *arg)
{
	struct fake_stream *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->head && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->head)
			break;
		struct op *op = s->head;
		s->head = op->next;
		if (!s->head)
			s->tail = NULL;
		s->busy = true;
		pthread_mutex_unlock(&s->mu);

		switch (op->kind) {
		case OP_SLEEP:
			nap_ns(op->value);
			break;
		case OP_GATE:
			while (!__atomic_load_n(op->gate, __ATOMIC_ACQUIRE))
				nap_ns(100000);
			break;
		case OP_WRITE:
			__atomic_store_n(op->word, op->value, __ATOMIC_RELEASE);
			break;
		case OP_FAULT:
			break;
		}

		pthread_mutex_lock(&s->mu);
		s->busy = false;
		if (op->kind == OP_FAULT) {
			s->faulted = true;
			while (s->head) {
				struct op *dead = s->head;
				s->head = dead->next;
				free(dead);
			}
			s->tail = NULL;
		}
		free(op);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

struct fake_stream *fake_stream_new(void)
{
	struct fake_stream *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (pthread_create(&s->thread, NULL, stream_main, s)) {
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		free(s);
		return NULL;
	}
	return s;
}

void fake_stream_destroy(struct fake_stream *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

static int push(struct fake_stream *s, struct op tmpl)
{
	struct op *op = malloc(sizeof(*op));
	if (!op)
		return -1;
	*op = tmpl;
	op->next = NULL;
	pthread_mutex_lock(&s->mu);
	if (s->faulted) {
		pthread_mutex_unlock(&s->mu);
		free(op);
		return -1;
	}
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int fake_stream_sleep(struct fake_stream *s, uint64_t ns)
{
	return push(s, (struct op){ .kind = OP_SLEEP, .value = ns });
}

int fake_stream_gate(struct fake_stream *s, const int *gate)
{
	return push(s, (struct op){ .kind = OP_GATE, .gate = gate });
}

int fake_stream_write(struct fake_stream *s, uint64_t *p, uint64_t value)
{
	return push(s, (struct op){ .kind = OP_WRITE, .word = p, .value = value });
}

int fake_stream_fault(struct fake_stream *s)
{
	return push(s, (struct op){ .kind = OP_FAULT });
}

int fake_stream_state(struct fake_stream *s)
{
	pthread_mutex_lock(&s->mu);
	int r = s->faulted ? -1 : (s->head || s->busy) ? 1 : 0;
	pthread_mutex_unlock(&s->mu);
	return r;
}

/* ---- registry ---- */

struct reg {
	uintptr_t host;
	size_t bytes;
	unsigned flags;
	bool used;
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct reg regs[FAKE_MAX_REGS];

int fake_reg_add(void *host, size_t bytes, unsigned flags)
{
	uintptr_t h = (uintptr_t)host;
	int r = -1;
	pthread_mutex_lock(&reg_mu);
	for (int i = 0; i < FAKE_MAX_REGS; i++)
		if (regs[i].used && h < regs[i].host + regs[i].bytes && regs[i].host < h + bytes)
			goto out; /* overlaps: CUDA says HOST_MEMORY_ALREADY_REGISTERED */
	for (int i = 0; i < FAKE_MAX_REGS; i++) {
		if (!regs[i].used) {
			regs[i] = (struct reg){ .host = h, .bytes = bytes, .flags = flags, .used = true };
			r = 0;
			break;
		}
	}
out:
	pthread_mutex_unlock(&reg_mu);
	return r;
}

int fake_reg_remove(void *host)
{
	int r = -1;
	pthread_mutex_lock(&reg_mu);
	for (int i = 0; i < FAKE_MAX_REGS; i++) {
		if (regs[i].used && regs[i].host == (uintptr_t)host) {
			regs[i].used = false;
			r = 0;
			break;
		}
	}
	pthread_mutex_unlock(&reg_mu);
	return r;
}

uint64_t fake_reg_device_address(void *host)
{
	uintptr_t h = (uintptr_t)host;
	uint64_t dev = 0;
	pthread_mutex_lock(&reg_mu);
	for (int i = 0; i < FAKE_MAX_REGS; i++)
		if (regs[i].used && h >= regs[i].host && h - regs[i].host < regs[i].bytes)
			dev = (uint64_t)h + FAKE_DEV_OFFSET;
	pthread_mutex_unlock(&reg_mu);
	return dev;
}

uint64_t *fake_reg_host_word(uint64_t dev, unsigned *flags)
{
	uint64_t *word = NULL;
	if (dev < FAKE_DEV_OFFSET || (dev & 7u))
		return NULL;
	uintptr_t h = (uintptr_t)(dev - FAKE_DEV_OFFSET);
	pthread_mutex_lock(&reg_mu);
	for (int i = 0; i < FAKE_MAX_REGS; i++) {
		if (regs[i].used && h >= regs[i].host && regs[i].bytes >= 8 &&
		    h - regs[i].host <= regs[i].bytes - 8) {
			word = (uint64_t *)h;
			if (flags)
				*flags = regs[i].flags;
		}
	}
	pthread_mutex_unlock(&reg_mu);
	return word;
}

int fake_reg_count(void)
{
	int n = 0;
	pthread_mutex_lock(&reg_mu);
	for (int i = 0; i < FAKE_MAX_REGS; i++)
		n += regs[i].used;
	pthread_mutex_unlock(&reg_mu);
	return n;
}

long fake_env_long(const char *name, long dflt)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	char *end;
	long n = strtol(v, &end, 0);
	return *end ? dflt : n;
}

bool fake_env_lists(const char *env, const char *name)
{
	const char *v = getenv(env);
	size_t len = strlen(name);
	while (v && *v) {
		const char *comma = strchr(v, ',');
		size_t n = comma ? (size_t)(comma - v) : strlen(v);
		if (n == len && strncmp(v, name, len) == 0)
			return true;
		v = comma ? comma + 1 : NULL;
	}
	return false;
}
