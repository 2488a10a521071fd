/* segment.c — libgaruda's segments: ask garudad for a sealed memfd, map it, register
 * the mapping with a backend device, hand out its words to streams, and present it
 * again (SEGMENT_ATTACH with the same memfd) to a restarted daemon.
 *
 * Without a session on a fallback client (GARUDA_FALLBACK=reactor) the segment is a
 * memfd made here, with the daemon's layout and seals, presented to garudad when it
 * is back.
 *
 * Promises: the mapping lives exactly as long as the segment object, and is
 * unregistered from the device before it is unmapped; a segment is never closed while
 * a stream uses one of its words; what the daemon sends is checked (type, fd, size,
 * layout) before it is used.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fdio.h"
#include "page.h"

/* Map the memfd the daemon sent and check it against what we asked for. */
static int map_checked(int fd, const struct garuda_msg *reply, uint32_t lines,
		       struct garuda_segment **out, size_t *bytes_out)
{
	size_t bytes = garuda_segment_bytes(lines, page_size());
	struct stat st;
	if (reply->type != GARUDA_MSG_SEGMENT || fd < 0 || reply->segment.lines != lines ||
	    reply->segment.bytes != bytes)
		return -GARUDA_E_PROTOCOL;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != bytes)
		return -GARUDA_E_PROTOCOL;
	struct garuda_segment *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	if (__atomic_load_n(&map->hdr.magic, __ATOMIC_RELAXED) != GARUDA_SEGMENT_MAGIC ||
	    __atomic_load_n(&map->hdr.layout, __ATOMIC_RELAXED) != GARUDA_SEGMENT_LAYOUT ||
	    __atomic_load_n(&map->hdr.lines, __ATOMIC_RELAXED) != lines) {
		munmap(map, bytes);
		return -GARUDA_E_PROTOCOL;
	}
	*out = map;
	*bytes_out = bytes;
	return 0;
}

int seg_create_local(uint32_t lines, int numa_node, int *fd_out, struct garuda_segment **map_out,
		     size_t *bytes_out)
{
	char name[64];
	snprintf(name, sizeof(name), "garuda-seg:local,pid=%d,lines=%u", (int)getpid(), lines);
	size_t bytes = garuda_segment_bytes(lines, page_size());
	_cleanup_close_ int fd = fdio_sealed_memfd(name, bytes); /* the same seals either side */
	if (fd < 0)
		return fd;
	struct garuda_segment *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	garuda_segment_header_init(map, lines, 0, numa_node); /* id: SEGMENT_ATTACH writes it */
	*fd_out = TAKE_FD(fd);
	*map_out = map;
	*bytes_out = bytes;
	return 0;
}

static void seg_destroy(struct garuda_seg *seg)
{
	if (seg->reg)
		seg->ops->unregister_memory(seg->backend, seg->reg);
	if (seg->map)
		munmap(seg->map, seg->bytes);
	if (seg->memfd >= 0)
		close(seg->memfd);
	if (seg->backend)
		seg->ops->close(seg->backend);
	free(seg->used);
	free(seg->tomb);
	free(seg);
}

DEFINE_CLEANUP(struct garuda_seg, seg_destroy)

/* The daemon made segment id in session gen and we do not keep it: say so. */
static void forget_daemon_segment(struct garuda_client *c, uint32_t id, uint64_t gen)
{
	struct garuda_msg m;
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_CLOSE, 0);
	m.segment_close.segment_id = id;
	(void)conn_tell_gen(c, &m, gen);
}

/* seg's memory, made here (local: the fallback chain, no session; the next session is
 * presented it, SEGMENT_ATTACH, like any other) or by garudad in session *gen (*id),
 * mapped. */
static int seg_make(struct garuda_client *c, struct garuda_seg *seg, bool local, uint64_t *gen,
		    uint32_t *id)
{
	if (local)
		return seg_create_local(seg->lines, seg->numa_node, &seg->memfd, &seg->map, &seg->bytes);
	struct garuda_msg m, reply;
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_OPEN, 0);
	m.segment_open.lines = seg->lines;
	m.segment_open.numa_node = seg->numa_node;
	int r = conn_request_gen(c, &m, -1, 0, &reply, &seg->memfd, gen);
	if (r < 0)
		return r;
	*id = reply.segment.segment_id;
	r = map_checked(seg->memfd, &reply, seg->lines, &seg->map, &seg->bytes);
	if (r < 0)
		forget_daemon_segment(c, *id, *gen);
	return r;
}

/* Put a made segment on c's list, unless what made it is gone meanwhile (both locks,
 * once): a local one when garudad came back (its presentation may have passed the
 * list already), a daemon's when its session died (the new one does not know it).
 * Then -GARUDA_E_DISCONNECTED: the caller retries. */
static int seg_link(struct garuda_client *c, struct garuda_seg *seg, bool local, uint64_t gen, uint32_t id)
{
	pthread_mutex_lock(&c->reg_lock);
	pthread_mutex_lock(&c->lock);
	bool gone = local ? c->state != CONN_DOWN : c->gen != gen;
	if (!gone) {
		seg->id = local ? 0 : id;
		seg->gen = local ? 0 : gen; /* local: presented by the next session */
		seg->next = c->segs;
		c->segs = seg;
	}
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->reg_lock);
	return gone ? -GARUDA_E_DISCONNECTED : 0;
}

static int seg_open(struct garuda_client *c, const char *backend, int device, uint32_t lines,
		    struct garuda_seg **out)
{
	if (out)
		*out = NULL;
	if (!c || !backend || !out) {
		client_set_error("garuda_segment_open: the client, the backend name and out must not be NULL");
		return -EINVAL;
	}
	if (lines == 0 || lines > GARUDA_SEGMENT_MAX_LINES) {
		client_set_error("a segment of %u lines: it has 1 to %u lines (8 words each)", lines,
				 (unsigned)GARUDA_SEGMENT_MAX_LINES);
		return -EINVAL;
	}
	const struct garuda_backend_ops *ops = garuda_backend_find(backend);
	if (!ops) {
		client_set_error("unknown backend \"%.64s\": the backends are host, cuda and hip", backend);
		return -EINVAL;
	}
	_cleanup_(seg_destroyp) struct garuda_seg *seg = calloc(1, sizeof(*seg));
	if (!seg)
		return -ENOMEM;
	seg->client = c;
	seg->ops = ops;
	seg->memfd = -1;
	seg->lines = lines;
	seg->used = calloc((size_t)lines * GARUDA_WORDS_PER_LINE, 1);
	seg->tomb = calloc((size_t)lines * GARUDA_WORDS_PER_LINE, sizeof(*seg->tomb));
	if (!seg->used || !seg->tomb)
		return -ENOMEM;
	int r = ops->open(device, &seg->backend);
	if (r < 0) {
		if (*garuda_backend_why())
			client_set_error("%s", garuda_backend_why());
		else
			client_set_error("backend %s, device %d: %s", ops->name, device, garuda_strerror(r));
		return r;
	}
	seg->numa_node = ops->numa_node(seg->backend);
	if (seg->numa_node < -1 || seg->numa_node > GARUDA_NUMA_MAX)
		seg->numa_node = -1;

	pthread_mutex_lock(&c->lock);
	bool local = c->fallback && c->state == CONN_DOWN;
	pthread_mutex_unlock(&c->lock);
	uint64_t gen = 0;
	uint32_t id = 0;
	if ((r = seg_make(c, seg, local, &gen, &id)) < 0)
		return r;
	if ((r = ops->register_memory(seg->backend, seg->map, seg->bytes, &seg->reg)) < 0) {
		seg->reg = NULL;
		client_set_error("backend %s, device %d: %s", ops->name, device,
				 *garuda_backend_why() ? garuda_backend_why() : garuda_strerror(r));
		if (!local)
			forget_daemon_segment(c, id, gen);
		return r;
	}
	seg->nfree = lines * GARUDA_WORDS_PER_LINE;
	if ((r = seg_link(c, seg, local, gen, id)) < 0)
		return r;
	*out = TAKE_PTR(seg);
	return 0;
}

int garuda_segment_open(struct garuda_client *c, const char *backend, int device, uint32_t lines,
			struct garuda_seg **out)
{
	return client_return(seg_open(c, backend, device, lines, out));
}

/* Unlink seg from the client and forget it daemon-side (if still in its session). */
static void seg_unlink_and_close(struct garuda_seg *seg, bool tell_daemon)
{
	struct garuda_client *c = seg->client;
	pthread_mutex_lock(&c->lock);
	for (struct garuda_seg **pp = &c->segs; *pp; pp = &(*pp)->next) {
		if (*pp == seg) {
			*pp = seg->next;
			break;
		}
	}
	uint64_t gen = seg->gen;
	uint32_t id = seg->id;
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->reg_lock);
	if (tell_daemon && gen)
		forget_daemon_segment(c, id, gen);
	seg_destroy(seg);
}

/* A freed stream's store into seg has still to land (its native stream may write
 * into the mapping any time: unmapping now would make that store fault). reg_lock
 * held. */
static bool seg_stores_pending(struct garuda_seg *seg)
{
	uint32_t nwords = seg->lines * GARUDA_WORDS_PER_LINE;
	for (uint32_t i = 0; i < nwords; i++) {
		if (seg->used[i] != 2 || !seg->tomb[i])
			continue;
		if (!garuda_reached(word_load(garuda_segment_word(seg->map, i)), seg->tomb[i]))
			return true;
		seg->tomb[i] = 0; /* landed: nothing more will come */
	}
	return false;
}

int garuda_segment_close(struct garuda_seg *seg)
{
	if (!seg)
		return 0;
	struct garuda_client *c = seg->client;
	pthread_mutex_lock(&c->reg_lock);
	if (seg->nstreams || seg_stores_pending(seg)) {
		pthread_mutex_unlock(&c->reg_lock);
		return client_fail(-GARUDA_E_BUSY);
	}
	seg_unlink_and_close(seg, true); /* unlocks reg_lock */
	return 0;
}

int garuda_segment_numa_node(const struct garuda_seg *seg)
{
	return seg ? seg->numa_node : client_fail(-EINVAL);
}

uint32_t garuda_segment_free_words(const struct garuda_seg *seg)
{
	if (!seg)
		return 0;
	pthread_mutex_lock(&seg->client->reg_lock);
	uint32_t n = seg->nfree;
	pthread_mutex_unlock(&seg->client->reg_lock);
	return n;
}

int garuda_segment_doorbell(const struct garuda_seg *seg, uint32_t **word, uint32_t *value)
{
	if (!seg || !word || !value)
		return client_fail(-EINVAL);
	*word = &seg->map->hdr.doorbell;
	*value = __atomic_load_n(*word, __ATOMIC_ACQUIRE);
	return 0;
}

int seg_present(struct garuda_seg *seg, uint64_t gen)
{
	struct garuda_client *c = seg->client;
	struct garuda_msg m, reply;
	garuda_msg_init(&m, GARUDA_MSG_SEGMENT_ATTACH, 0);
	m.flags = present_flag(c);
	m.segment_open.lines = seg->lines;
	m.segment_open.numa_node = seg->numa_node;
	int r = conn_request_gen(c, &m, seg->memfd, gen, &reply, NULL, NULL);
	if (r == -GARUDA_E_DISCONNECTED || r == -GARUDA_E_TIMEOUT)
		return -GARUDA_E_DISCONNECTED;
	if (r == 0 && (reply.type != GARUDA_MSG_SEGMENT || reply.segment.lines != seg->lines ||
		       reply.segment.bytes != seg->bytes))
		r = -GARUDA_E_PROTOCOL;
	pthread_mutex_lock(&c->lock);
	if (r < 0) {
		seg->gen = 0; /* its streams stay unpresented: waits poll */
		seg->attach_err = r;
	} else {
		seg->id = reply.segment.segment_id;
		seg->gen = gen;
		seg->attach_err = 0;
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* Segments given up with a store still to land (seg_close_all): kept mapped and
 * registered until the process exits, reachable from here. */
static struct garuda_seg *abandoned;
static pthread_mutex_t abandoned_lock = PTHREAD_MUTEX_INITIALIZER;

/* Unlink seg from the client (reg_lock held, released), forget it daemon-side, and
 * keep its mapping, registration and backend: a store queued on a native stream may
 * still land in it, and would fault in an unmapped segment (or, on a GPU, write
 * memory no longer registered). Its memfd goes. */
static void seg_abandon(struct garuda_seg *seg)
{
	struct garuda_client *c = seg->client;
	pthread_mutex_lock(&c->lock);
	for (struct garuda_seg **pp = &c->segs; *pp; pp = &(*pp)->next) {
		if (*pp == seg) {
			*pp = seg->next;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	pthread_mutex_unlock(&c->reg_lock);
	if (seg->memfd >= 0)
		close(seg->memfd);
	seg->memfd = -1;
	seg->client = NULL;
	pthread_mutex_lock(&abandoned_lock);
	seg->next = abandoned;
	abandoned = seg;
	pthread_mutex_unlock(&abandoned_lock);
}

void seg_close_all(struct garuda_client *c)
{
	/* streams first: they hold words of the segments */
	for (;;) {
		struct garuda_stream *s = NULL;
		pthread_mutex_lock(&c->lock);
		for (uint32_t i = 0; i < c->nstreams_cap && !s; i++)
			s = c->streams[i];
		pthread_mutex_unlock(&c->lock);
		if (!s)
			break;
		garuda_stream_free(s);
	}
	for (;;) {
		pthread_mutex_lock(&c->reg_lock);
		struct garuda_seg *seg = c->segs;
		if (!seg) {
			pthread_mutex_unlock(&c->reg_lock);
			break;
		}
		if (seg_stores_pending(seg))
			seg_abandon(seg); /* unlocks reg_lock */
		else
			seg_unlink_and_close(seg, false); /* unlocks reg_lock */
	}
}
