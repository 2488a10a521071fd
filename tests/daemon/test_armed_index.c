/* test_armed_index.c — daemon/armed_index.c as a unit, against a model: random ARMs
 * (payloads of 3 sinks, 2 segments, 3 slots, 4 tokens: many duplicates) and removals,
 * and after each, every key's lookup checked against a brute-force walk of the live
 * payloads. Checked: a lookup yields every indexed arm with its sink, slot and token,
 * each once, and no other; deleting what it just yielded while it goes on loses
 * nothing; the table survives growth, deleted slots, and being freed when its last id
 * leaves and made again; a payload's indexed bit says where it is.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "armed_index.h"
#include "fdcheck.h"

TestSuite(armed_index, .init = fdcheck_begin, .fini = fdcheck_end);

enum { CAP = 4096, SINKS = 3, SEGS = 2, SLOTS = 3, TOKENS = 4 };

struct model {
	struct armed pay[CAP];
	bool live[CAP];
	struct sink *sinks[SINKS];
	struct segment segs[SEGS];
	struct armed_index x;
};

static uint32_t rnd(uint64_t *s, uint32_t n)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*s >> 33) % n;
}

/* Every key: the lookup's ids against the live indexed payloads with that key. */
static void check_all(struct model *m)
{
	for (unsigned k = 0; k < SINKS; k++)
		for (unsigned g = 0; g < SEGS; g++)
			for (unsigned i = 0; i < SLOTS; i++)
				for (uint64_t t = 0; t < TOKENS; t++) {
					static uint8_t got[CAP];
					memset(got, 0, sizeof(got));
					struct armed_index_key q =
						armed_index_key(&m->x, m->pay, m->sinks[k], m->segs[g].id, i, t);
					for (uint32_t id; (id = armed_index_next(&m->x, &q)) != ARMED_INDEX_NONE;) {
						cr_assert_lt(id, CAP);
						cr_assert_eq(got[id]++, 0, "id %u yielded twice", id);
					}
					for (uint32_t id = 0; id < CAP; id++) {
						const struct armed *a = &m->pay[id];
						bool want = m->live[id] && a->indexed && a->sink == m->sinks[k] &&
							    a->seg == &m->segs[g] && a->index == i && a->token == t;
						cr_assert_eq(got[id], want, "id %u: yielded %u, want %d", id, got[id], want);
					}
				}
}

Test(armed_index, lookups_match_a_brute_force_walk_through_growth_and_deletes)
{
	static struct model m;
	memset(&m, 0, sizeof(m));
	for (unsigned k = 0; k < SINKS; k++)
		m.sinks[k] = (struct sink *)(uintptr_t)(0x1000 * (k + 1)); /* compared only */
	for (unsigned g = 0; g < SEGS; g++)
		m.segs[g].id = 7 + g;
	uint64_t seed = 42;
	unsigned nlive = 0;
	for (unsigned round = 0; round < 6; round++) {
		/* grow to some thousands (the table doubles), with deletes in between */
		unsigned target = 400 + 400 * round; /* of CAP: the adds outrun the deletes */
		while (nlive < target) {
			if (nlive && rnd(&seed, 8) == 0) {
				uint32_t id = rnd(&seed, CAP);
				if (m.live[id] && m.pay[id].indexed) {
					armed_index_del(&m.x, m.pay, id);
					cr_assert(!m.pay[id].indexed);
					m.live[id] = false;
					nlive--;
				}
				continue;
			}
			uint32_t id = rnd(&seed, CAP);
			if (m.live[id])
				continue;
			m.pay[id] = (struct armed){ .sink = m.sinks[rnd(&seed, SINKS)], .seg = &m.segs[rnd(&seed, SEGS)],
						    .index = rnd(&seed, SLOTS), .token = rnd(&seed, TOKENS) };
			cr_assert_eq(armed_index_reserve(&m.x, m.pay, 1), 0);
			armed_index_add(&m.x, m.pay, id);
			cr_assert(m.pay[id].indexed);
			m.live[id] = true;
			nlive++;
		}
		cr_assert_eq(m.x.live, nlive);
		cr_assert_leq(2 * m.x.live, m.x.amask + 1, "the arms' table is at most half full");
		cr_assert_leq(2 * m.x.nkeys, m.x.kmask + 1, "the keys' table is at most half full");
		cr_assert_leq(m.x.nkeys, SINKS * SEGS * SLOTS * TOKENS);
		check_all(&m);
		/* a DISARM's walk: delete each id as it is yielded, for a few keys */
		for (unsigned d = 0; d < 8; d++) {
			struct sink *sk = m.sinks[rnd(&seed, SINKS)];
			uint32_t sg = m.segs[rnd(&seed, SEGS)].id, ix = rnd(&seed, SLOTS);
			uint64_t tk = rnd(&seed, TOKENS);
			struct armed_index_key q = armed_index_key(&m.x, m.pay, sk, sg, ix, tk);
			for (uint32_t id; (id = armed_index_next(&m.x, &q)) != ARMED_INDEX_NONE;) {
				armed_index_del(&m.x, m.pay, id);
				m.live[id] = false;
				nlive--;
			}
			struct armed_index_key again = armed_index_key(&m.x, m.pay, sk, sg, ix, tk);
			cr_assert_eq(armed_index_next(&m.x, &again), ARMED_INDEX_NONE, "the key's arms all went");
		}
		check_all(&m);
		if (round % 2) { /* empty it: the table goes, and is made again by the next add */
			for (uint32_t id = 0; id < CAP; id++)
				if (m.live[id]) {
					armed_index_del(&m.x, m.pay, id);
					m.live[id] = false;
				}
			nlive = 0;
			cr_assert(!m.x.arms && !m.x.keys, "the last id's delete frees the tables");
			check_all(&m);
		}
	}
	/* a payload never indexed: its delete does nothing */
	struct armed stray = { .sink = m.sinks[0], .seg = &m.segs[0] };
	m.pay[CAP - 1] = stray;
	m.live[CAP - 1] = false;
	armed_index_del(&m.x, m.pay, CAP - 1);
	check_all(&m);
	armed_index_free(&m.x);
}
