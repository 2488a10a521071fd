/* sink.c — lifetime of sinks and bindings; see sink.h. */
#include "sink.h"

#include <stdlib.h>
#include <unistd.h>

#include "points.h"

struct sink *sink_new(int fd, uint64_t session_id, struct quota_uid *uid, struct quota_cgroup *cgroup)
{
	struct sink *s = calloc(1, sizeof(*s));
	if (!s) {
		quota_cgroup_unref(cgroup);
		return NULL;
	}
	atomic_init(&s->refs, 1);
	s->fd = fd;
	s->session_id = session_id;
	s->quota.uid = uid;
	s->quota.cgroup = cgroup;
	return s;
}

void sink_unref(struct sink *s)
{
	if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	close(s->fd);
	points_free(&s->points, &s->quota); /* gives back its points quota */
	quota_cgroup_unref(s->quota.cgroup);
	free(s);
}

struct binding *binding_new(int fd, uint32_t segment_id, uint32_t index)
{
	struct binding *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	atomic_init(&b->refs, 1);
	b->fd = fd;
	b->segment_id = segment_id;
	b->index = index;
	return b;
}

void binding_unref(struct binding *b)
{
	if (!b || atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1)
		return;
	close(b->fd);
	free(b->arms);
	free(b);
}
