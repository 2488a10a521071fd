/* fuzz_plan.c — libFuzzer target over garuda_plan_parse_n() and the estimator.
 *
 * The whole input is a plan text. Aborts (a finding) when:
 *   - parse refuses with anything but GARUDA_E_BAD_PLAN, leaves *out non-zero, or
 *     writes an empty, cut-short or unprintable message (or overruns a short buffer:
 *     ASan);
 *   - parse accepts and garuda_plan_check() refuses, or formatting does not give back
 *     the input byte for byte, or reparsing the formatted text gives another plan.
 * Then the same bytes drive an estimator (parameters from the plan when it parsed
 * with +predict, else from the first bytes; then 9-byte records: kind byte, 64-bit
 * value) checked against an independent model of the window: the prediction is the
 * minimum of the last `window` records, a censored record never raises it, and
 * sleep follows the rule and never exceeds max_sleep.
 * Built with -fsanitize=fuzzer,address,undefined under -Dfuzz=true (clang); the same
 * function replays tests/fuzz/corpus-plan in the ordinary test suite
 * (test_corpus_plan.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errcode.h"
#include "estimator.h"
#include "plan.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


#define MAX_RECORDS 256u

static uint64_t us_to_ns(uint64_t us)
{
	return us > UINT64_MAX / 1000u ? UINT64_MAX : us * 1000u;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void check_parse(const char *text, size_t size, struct garuda_plan *p)
{
	char msg[GARUDA_PLAN_MSG_MAX];
	int r = garuda_plan_parse_n(text, size, p, msg, sizeof(msg));
	if (r != 0) {
		CHECK(r == -GARUDA_E_BAD_PLAN);
		struct garuda_plan zero;
		memset(&zero, 0, sizeof(zero));
		CHECK(garuda_plan_equal(p, &zero) && p->kind == 0 && !p->predict);
		size_t len = strlen(msg);
		CHECK(len > 0 && len < sizeof(msg) - 1);
		for (size_t i = 0; i < len; i++)
			CHECK(msg[i] >= ' ' && msg[i] <= '~');
		CHECK(strchr(msg, ':') != NULL);
		/* a short buffer is cut, never overrun */
		char tiny[5];
		CHECK(garuda_plan_parse_n(text, size, p, tiny, sizeof(tiny)) == r);
		CHECK(strlen(tiny) < sizeof(tiny));
		CHECK(garuda_plan_parse_n(text, size, p, NULL, 0) == r);
		return;
	}
	CHECK(msg[0] == '\0');
	CHECK(garuda_plan_check(p, NULL, 0) == 0);
	CHECK(p->kind >= GARUDA_PLAN_BLOCK && p->kind <= GARUDA_PLAN_FLAG);
	CHECK(!(p->kind == GARUDA_PLAN_BLOCK && p->predict));
	char out[GARUDA_PLAN_TEXT_MAX];
	int n = garuda_plan_format(p, out, sizeof(out));
	CHECK(n >= 0 && (size_t)n == size && strlen(out) == size);
	CHECK(memcmp(out, text, size) == 0);
	struct garuda_plan again;
	CHECK(garuda_plan_parse(out, &again, NULL, 0) == 0);
	CHECK(garuda_plan_equal(p, &again));
	/* one byte short of room: refused, never overrun */
	CHECK(garuda_plan_format(p, out, size) == -ENOSPC);
}

static void check_estimator(const uint8_t *data, size_t size, const struct garuda_plan *p)
{
	struct garuda_plan_predict pp;
	size_t off = 0;
	if (p->predict) {
		pp = p->pred;
	} else {
		if (size < 4)
			return;
		pp = (struct garuda_plan_predict){
			.margin_us = data[0] * 4u,
			.min_sleep_us = data[1] & 0x7f,
			.window = 1 + data[3] % GARUDA_PLAN_WINDOW_MAX,
		};
		pp.max_sleep_us = pp.min_sleep_us + (data[1] & 0x80 ? UINT64_MAX / 2 : data[2] * 100u);
		if (!pp.max_sleep_us) /* at least 1 (plan.c's key table) */
			pp.max_sleep_us = 1;
		off = 4;
	}
	struct garuda_estimator e;
	CHECK(garuda_estimator_init(&e, &pp) == 0);
	uint64_t margin = us_to_ns(pp.margin_us), min_sleep = us_to_ns(pp.min_sleep_us);
	uint64_t max_sleep = us_to_ns(pp.max_sleep_us);
	CHECK(garuda_estimator_sleep_ns(&e) == 0);

	uint64_t hist[MAX_RECORDS];
	unsigned n = 0;
	for (; off + 9 <= size && n < MAX_RECORDS; off += 9) {
		uint8_t kind = data[off];
		uint64_t t = le64(data + off + 1);
		if (kind & 2) /* realistic range too, not only huge values */
			t %= 50000000u;
		uint64_t before = 0;
		bool had = garuda_estimator_prediction_ns(&e, &before);
		bool censored = kind & 1;
		if (censored) {
			garuda_estimator_record_censored_ns(&e, t);
			hist[n++] = (had && before < t ? before : t) / 2;
		} else {
			garuda_estimator_record_exact_ns(&e, t);
			hist[n++] = t;
		}
		uint64_t model = UINT64_MAX;
		for (unsigned k = n > pp.window ? n - (unsigned)pp.window : 0; k < n; k++)
			model = hist[k] < model ? hist[k] : model;
		uint64_t after = 0;
		CHECK(garuda_estimator_prediction_ns(&e, &after));
		CHECK(after == model);
		if (censored) {
			CHECK(after <= t / 2);
			if (had)
				CHECK(after <= before);
		}
		uint64_t s = garuda_estimator_sleep_ns(&e);
		uint64_t want = model <= margin ? 0 : model - margin;
		if (want < min_sleep)
			want = 0;
		if (want > max_sleep)
			want = max_sleep;
		CHECK(s == want);
		CHECK(s <= max_sleep);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact-size copy, so ASan sees any read past the text */
	char *text = malloc(size ? size : 1);
	CHECK(text != NULL);
	if (size)
		memcpy(text, data, size);
	struct garuda_plan p;
	check_parse(text, size, &p);
	free(text);
	check_estimator(data, size, &p);
	return 0;
}
