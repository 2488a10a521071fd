/* test_doc.c — docs/protocol.md's worked examples are real: every hex block of the
 * document decodes as a valid message that re-encodes to the same bytes, the HELLO, ARM,
 * ARM_BATCH and READY_BATCH examples are exactly the test vectors of wire_samples.h, and
 * the document lists every registry code with its number, name and message. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errcode.h"
#include "fdcheck.h"
#include "wire.h"
#include "wire_samples.h"

TestSuite(doc, .init = fdcheck_begin, .fini = fdcheck_end);

#define MAX_BLOCKS 16

struct block {
	uint8_t bytes[GARUDA_MSG_MAX];
	size_t len;
};

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	cr_assert_not_null(f, "%s: %m", path);
	static char text[1 << 17];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	cr_assert_lt(n, sizeof(text) - 1, "document too large for the test");
	text[n] = '\0';
	return text;
}

/* Hex blocks: ``` fences whose lines look like "08: 00 01 ..." (then a comment). */
static size_t parse_blocks(char *text, struct block *b)
{
	size_t nb = 0;
	bool in = false, hex = false;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		if (strncmp(line, "```", 3) == 0) {
			if (in && hex)
				nb++;
			in = !in;
			hex = false;
			if (in) {
				cr_assert_lt(nb, MAX_BLOCKS);
				b[nb].len = 0;
			}
			continue;
		}
		if (!in || !isxdigit((unsigned char)line[0]) || !isxdigit((unsigned char)line[1]) ||
		    line[2] != ':')
			continue;
		unsigned off = (unsigned)strtoul(line, NULL, 16);
		cr_assert_eq(off, b[nb].len, "hex block %zu: offset %02x out of sequence", nb, off);
		hex = true;
		const char *p = line + 3;
		for (;;) {
			while (*p == ' ')
				p++;
			if (!isxdigit((unsigned char)p[0]) || !isxdigit((unsigned char)p[1]) ||
			    (p[2] != ' ' && p[2] != '\0'))
				break;
			char two[3] = { p[0], p[1], 0 };
			cr_assert_lt(b[nb].len, GARUDA_MSG_MAX);
			b[nb].bytes[b[nb].len++] = (uint8_t)strtoul(two, NULL, 16);
			p += 2;
		}
	}
	return nb;
}

Test(doc, hex_examples_are_valid_messages)
{
	static struct block b[MAX_BLOCKS];
	size_t nb = parse_blocks(slurp(PROTOCOL_MD), b);
	cr_assert_geq(nb, 5, "HELLO, WELCOME, ARM, READY, ERROR examples");
	static const struct {
		unsigned type;
		const uint8_t *bytes;
		size_t len;
	} pinned[] = {
		{ GARUDA_MSG_HELLO, sample_hello, sizeof(sample_hello) },
		{ GARUDA_MSG_ARM, sample_arm, sizeof(sample_arm) },
		{ GARUDA_MSG_ARM, sample_arm_point, sizeof(sample_arm_point) },
		{ GARUDA_MSG_ARM_BATCH, sample_arm_batch, sizeof(sample_arm_batch) },
		{ GARUDA_MSG_READY_BATCH, sample_ready_batch, sizeof(sample_ready_batch) },
	};
	bool seen[sizeof(pinned) / sizeof(pinned[0])] = { false };
	for (size_t i = 0; i < nb; i++) {
		struct garuda_msg m;
		int r = garuda_msg_decode(b[i].bytes, b[i].len, 0, &m);
		cr_assert_eq(r, 0, "example %zu does not decode: %s", i, garuda_strerror(r));
		uint8_t again[GARUDA_MSG_MAX];
		cr_assert_eq(garuda_msg_encode(&m, again, sizeof(again)), (ssize_t)b[i].len);
		cr_assert_arr_eq(again, b[i].bytes, b[i].len);
		for (size_t k = 0; k < sizeof(pinned) / sizeof(pinned[0]); k++) {
			/* a type may have several examples: each is pinned by its cookie */
			if (m.type != pinned[k].type || b[i].len < 24 || pinned[k].len < 24 ||
			    memcmp(b[i].bytes + 16, pinned[k].bytes + 16, 8) != 0)
				continue;
			const char *name = garuda_msg_type_name(m.type);
			cr_assert_eq(b[i].len, pinned[k].len, "%s example: %zu bytes", name, b[i].len);
			cr_assert_arr_eq(b[i].bytes, pinned[k].bytes, pinned[k].len,
					 "%s example differs from wire_samples.h", name);
			seen[k] = true;
		}
	}
	for (size_t k = 0; k < sizeof(pinned) / sizeof(pinned[0]); k++)
		cr_assert(seen[k], "docs/protocol.md has no %s example",
			  garuda_msg_type_name(pinned[k].type));
}

Test(doc, every_registry_code_is_documented)
{
	const char *text = slurp(PROTOCOL_MD);
	for (int code = GARUDA_ERR_BASE; garuda_errcode_known(code); code++) {
		char row[512];
		snprintf(row, sizeof(row), "| %d | `%s` | %s |", code, garuda_errcode_name(code),
			 garuda_strerror(code));
		cr_assert_not_null(strstr(text, row), "docs/protocol.md lacks the row: %s", row);
	}
	/* and where the registry ends: a client rejects the codes past it (it said 1035
	 * while 1035 was a registry code) */
	int end = GARUDA_ERR_BASE;
	while (garuda_errcode_known(end))
		end++;
	char past[64];
	snprintf(past, sizeof(past), "%d and above until the registry", end);
	cr_assert_not_null(strstr(text, past), "docs/protocol.md does not say the registry ends "
			   "before %d (\"%s\")", end, past);
}
