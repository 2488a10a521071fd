/* raw.c — see raw.h. */
#include "raw.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

int rc_connect(struct rc *c, const char *path)
{
	return rc_connect_features(c, path, 0);
}

int rc_connect_features(struct rc *c, const char *path, uint32_t features)
{
	memset(c, 0, sizeof(*c));
	c->seg.memfd = -1;
	return gd_open_features(&c->raw, path, features);
}

void rc_close(struct rc *c)
{
	gd_seg_unmap(&c->seg);
	gd_close(&c->raw);
}

int rc_segment_open(struct rc *c, uint32_t lines, bool map, int *keep_fd)
{
	gd_seg_unmap(&c->seg);
	int r = gd_segment_open(&c->raw, lines, -1, &c->seg);
	if (r)
		return r;
	if (keep_fd)
		*keep_fd = c->seg.memfd;
	else
		close(c->seg.memfd);
	c->seg.memfd = -1; /* 1,000 clients: keep no fd per segment */
	if (!map)
		gd_seg_unmap(&c->seg);
	return 0;
}

int rc_bind(struct rc *c, uint32_t index, int efd)
{
	return gd_bind(&c->raw, gd_slot(&c->seg, index), efd);
}

int rc_arm(struct rc *c, uint32_t index, uint64_t target, uint64_t token, uint8_t form)
{
	return gd_arm_flags(&c->raw, gd_slot(&c->seg, index), target, token, form, GARUDA_F_NOREPLY);
}

int rc_arm_point(struct rc *c, uint32_t index, uint64_t target, uint64_t token, uint8_t form,
		 uint32_t point)
{
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_ARM, 0);
	m.flags = GARUDA_F_NOREPLY;
	m.arm.slot = gd_slot(&c->seg, index);
	m.arm.target = target;
	m.arm.token = token;
	m.arm.form = form;
	m.arm.point = point;
	return gd_send(&c->raw, &m, NULL, 0);
}

int rc_arm_acked(struct rc *c, uint32_t index, uint64_t target, uint64_t token, uint8_t form)
{
	return gd_arm(&c->raw, gd_slot(&c->seg, index), target, token, form);
}

int rc_recv(struct rc *c, struct garuda_msg *m, int timeout_ms)
{
	int r = gd_recv(&c->raw, m, NULL, timeout_ms < 0 ? GD_DEADLINE_MS : timeout_ms);
	return r == 1 ? 0 : r == 0 ? -ETIMEDOUT : r;
}
