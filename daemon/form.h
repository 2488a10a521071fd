/* form.h — the readiness forms garudad delivers, one row each (the table is defined in
 * readiness.c, beside the delivery calls its rows name; indexed
 * by the wire's enum garuda_form): how a pass orders and groups the fired descriptors
 * of the form, the call that delivers one group, what an ARM of the form needs, and the
 * form's name in the control plane. Also the per-form counts (by_form) that sinks,
 * scanners, session views and the control plane's totals keep.
 *
 * Promises: every form the wire accepts (proto/wire.c, 1 .. GARUDA_FORM_COUNT - 1) has
 * a complete row; nothing else in garudad tests a form's value: adding a form is its
 * wire value (proto/wire.h), its name (proto/control_names.h) and a row in readiness.c (with a
 * readiness_* delivery call when it writes in a new way). */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

struct armed;
struct fired;
struct readiness;

struct form_ops {
	const char *name; /* its key in the control plane (CTL_KEY_*): "eventfd" */
	/* delivery order within a pass, lowest first: writes that cannot block (doorbells,
	 * messages) before those a client can make block (eventfds, up to the guard) */
	int rank;
	bool needs_binding; /* an ARM needs its slot bound to an eventfd, else NOT_BOUND */
	/* what one write serves: fired descriptors with equal keys are delivered together */
	uintptr_t (*group_key)(const struct armed *a);
	/* deliver f[0..n), fired descriptors of this form with one group key (readiness.h) */
	void (*deliver)(struct readiness *r, struct fired *f, unsigned n);
};

extern const struct form_ops form_table[GARUDA_FORM_COUNT];

/* The row of a form the wire validated (an armed descriptor's). */
static inline const struct form_ops *form_get(uint8_t form)
{
	return &form_table[form];
}

/* A form's name ("eventfd", "message", "doorbell"), or NULL for a value that is none. */
const char *form_name(unsigned form);

/* Every form, in wire order. */
#define FORM_EACH(f) for (unsigned f = 1; f < GARUDA_FORM_COUNT; f++)

/* Readiness delivered, by form: one count per wire form (index garuda_form_index();
 * 0 holds what had no form). A sink and a scanner keep a tally (atomics, bumped by the
 * scanner that fires); views and totals copy it into counts. */
struct form_counts {
	uint64_t n[GARUDA_FORM_COUNT];
};
struct form_tally {
	atomic_uint_fast64_t n[GARUDA_FORM_COUNT];
};

static inline void form_tally_add(struct form_tally *t, uint8_t form, uint64_t n)
{
	atomic_fetch_add_explicit(&t->n[garuda_form_index(form)], n, memory_order_relaxed);
}

static inline void form_tally_read(const struct form_tally *t, struct form_counts *out)
{
	for (unsigned f = 0; f < GARUDA_FORM_COUNT; f++)
		out->n[f] = atomic_load_explicit(&t->n[f], memory_order_relaxed);
}

static inline void form_counts_add(struct form_counts *sum, const struct form_counts *c)
{
	for (unsigned f = 0; f < GARUDA_FORM_COUNT; f++)
		sum->n[f] += c->n[f];
}
