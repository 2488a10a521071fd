/* form.c — the table of readiness forms (form.h): one row per wire form. */
#include "form.h"

#include "armed.h"
#include "control_names.h"
#include "readiness.h"

static uintptr_t key_binding(const struct armed *a)
{
	return (uintptr_t)a->bind;
}

static uintptr_t key_segment(const struct armed *a)
{
	return (uintptr_t)a->seg;
}

static uintptr_t key_sink(const struct armed *a)
{
	return (uintptr_t)a->sink;
}

const struct form_ops form_table[GARUDA_FORM_COUNT] = {
	/* +1 on the slot's eventfd, one write per binding (the guard covers it) */
	[GARUDA_FORM_EVENTFD] = { .name = CTL_KEY_EVENTFD, .rank = 2, .needs_binding = true,
				  .group_key = key_binding, .deliver = readiness_eventfd },
	/* READY / READY_BATCH on the session's socket, one sendmmsg run per sink */
	[GARUDA_FORM_MESSAGE] = { .name = CTL_KEY_MESSAGE, .rank = 1,
				  .group_key = key_sink, .deliver = readiness_messages },
	/* bump the segment's doorbell and FUTEX_WAKE it, once per segment */
	[GARUDA_FORM_DOORBELL] = { .name = CTL_KEY_DOORBELL, .rank = 0,
				   .group_key = key_segment, .deliver = readiness_doorbell },
};

const char *form_name(unsigned form)
{
	return form < GARUDA_FORM_COUNT ? form_table[form].name : NULL;
}
