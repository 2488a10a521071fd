/* points.c — see points.h. */
#include "points.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "errcode.h"
#include "quota.h"

/* Loop thread: the only writer of *tab (but points_free, at the last reference). */
static struct points *table_of(struct points *_Atomic *tab)
{
	struct points *t = atomic_load_explicit(tab, memory_order_relaxed);
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		pthread_mutex_init(&t->lock, NULL);
		t->newest = t->oldest = POINT_NONE;
		/* release: a scanner reads the slot for an arm armed before this one (no
		 * command-queue mutex orders that read after this store), and its acquire
		 * load (sink_points) then sees the mutex initialised */
		atomic_store_explicit(tab, t, memory_order_release);
	}
	return t;
}

/* Room for twice the points (8 at first): 0 or -ENOMEM (the table as it was). */
static int grow(struct points *t)
{
	unsigned cap = t->cap ? t->cap * 2 : 8;
	struct point *np = realloc(t->p, cap * sizeof(*np));
	if (np)
		t->p = np;
	uint64_t *nk = np ? realloc(t->keys, cap * sizeof(*nk)) : NULL;
	if (!nk)
		return -ENOMEM; /* what grew is kept: the next grow reallocates it again */
	t->keys = nk;
	t->cap = cap;
	return 0;
}

/* The LRU list: i out of it, or in at its newest end. */
static void lru_unlink(struct points *t, uint32_t i)
{
	struct point *p = &t->p[i];
	if (p->newer != POINT_NONE)
		t->p[p->newer].older = p->older;
	else
		t->newest = p->older;
	if (p->older != POINT_NONE)
		t->p[p->older].newer = p->newer;
	else
		t->oldest = p->newer;
}

static void lru_push(struct points *t, uint32_t i)
{
	struct point *p = &t->p[i];
	p->newer = POINT_NONE;
	p->older = t->newest;
	if (t->newest != POINT_NONE)
		t->p[t->newest].newer = i;
	else
		t->oldest = i;
	t->newest = i;
}

/* A slot for key, not yet in the table: a fresh one charged to the quota, else the LRU
 * one (its old key forgotten); in the map and the LRU list. The slot, or -errno. */
static int new_slot(struct quota_account *q, struct points *t, const struct config *cfg, uint64_t key)
{
	uint32_t i;
	bool fresh = quota_charge(q, cfg, Q_POINTS, 1) == 0;
	if (fresh) {
		if (t->n == t->cap && grow(t) < 0) {
			quota_release(q, Q_POINTS, 1);
			return -ENOMEM;
		}
		i = t->n;
	} else {
		if (!t->n)
			return -GARUDA_E_QUOTA;
		i = t->oldest;
	}
	if (garuda_keymap_put(&t->slot_of, key, i) < 0) {
		if (fresh)
			quota_release(q, Q_POINTS, 1);
		return -ENOMEM; /* nothing changed */
	}
	if (fresh) {
		t->n++;
	} else {
		garuda_keymap_del(&t->slot_of, t->keys[i]);
		lru_unlink(t, i);
	}
	t->keys[i] = key;
	lru_push(t, i);
	return (int)i;
}

void points_lookup(struct points *_Atomic *tab, struct quota_account *q, const struct config *cfg,
		   uint32_t plan_gen, uint64_t key, uint32_t *slot, uint64_t *sleep_ns,
		   uint64_t *exact_sleep_ns)
{
	*slot = POINT_NONE;
	*sleep_ns = *exact_sleep_ns = 0;
	struct points *t = table_of(tab);
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	uint64_t v;
	bool fresh = !garuda_keymap_get(&t->slot_of, key, &v);
	int i = fresh ? new_slot(q, t, cfg, key) : (int)v;
	if (i < 0)
		goto out;
	struct point *p = &t->p[i];
	if (fresh || p->plan_gen != plan_gen) {
		p->plan_gen = plan_gen;
		if (garuda_estimator_init(&p->est, &cfg->plan.pred) < 0) /* a plan without predict */
			garuda_estimator_init(&p->est, &(struct garuda_plan_predict){ .max_sleep_us = 1,
										    .window = 1 });
	}
	if (!fresh && t->newest != (uint32_t)i) { /* used now: the newest */
		lru_unlink(t, (uint32_t)i);
		lru_push(t, (uint32_t)i);
	}
	*slot = (uint32_t)i;
	/* the deadline as far as the prediction goes: the scanner's watcher sleeps toward
	 * it in steps of at most max_sleep_us (a 10 s kernel: ten 1 s sleeps, then one
	 * short window), never a long spin */
	*sleep_ns = garuda_estimator_horizon_ns(&p->est);
	*exact_sleep_ns = garuda_estimator_exact_horizon_ns(&p->est);
out:
	pthread_mutex_unlock(&t->lock);
}

void points_record(struct points *t, uint32_t slot, uint64_t key, const struct garuda_find *f)
{
	if (slot == POINT_NONE || !t)
		return;
	pthread_mutex_lock(&t->lock);
	if (slot < t->n && t->keys[slot] == key)
		garuda_policy_record(&t->p[slot].est, f);
	pthread_mutex_unlock(&t->lock);
}

bool points_peek(struct points *t, uint32_t slot, uint64_t key, uint64_t *sleep_ns,
		 uint64_t *exact_sleep_ns)
{
	bool found = false;
	if (slot == POINT_NONE || !t)
		return false;
	pthread_mutex_lock(&t->lock);
	if (slot < t->n && t->keys[slot] == key) {
		*sleep_ns = garuda_estimator_horizon_ns(&t->p[slot].est);
		*exact_sleep_ns = garuda_estimator_exact_horizon_ns(&t->p[slot].est);
		found = true;
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}

int points_list(struct points *t, struct point_view **out)
{
	unsigned n = t ? t->n : 0;
	*out = calloc(n ? n : 1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	if (!t)
		return 0;
	pthread_mutex_lock(&t->lock);
	n = t->n;
	struct point_view *v = realloc(*out, (n ? n : 1) * sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&t->lock);
		return -ENOMEM; /* *out is still the old block: the caller frees it */
	}
	*out = v;
	for (unsigned i = 0; i < n; i++) {
		const struct garuda_estimator *e = &t->p[i].est;
		v[i] = (struct point_view){ .key = t->keys[i], .exact = e->exact, .censored = e->censored,
					    .sleep_ns = garuda_estimator_sleep_ns(e) };
		v[i].predicted = garuda_estimator_prediction_ns(e, &v[i].prediction_ns);
	}
	pthread_mutex_unlock(&t->lock);
	return (int)n;
}

void points_free(struct points *_Atomic *tab, struct quota_account *q)
{
	/* the last reference: no scanner reads it any more */
	struct points *t = atomic_load_explicit(tab, memory_order_acquire);
	if (!t)
		return;
	quota_release(q, Q_POINTS, t->n);
	pthread_mutex_destroy(&t->lock);
	free(t->p);
	free(t->keys);
	garuda_keymap_free(&t->slot_of);
	free(t);
	atomic_store_explicit(tab, NULL, memory_order_relaxed);
}
