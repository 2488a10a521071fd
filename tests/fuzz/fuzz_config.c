/* fuzz_config.c — libFuzzer target over garudad's config-file loader
 * (daemon/config.c: config_load_file()).
 *
 * The whole input is the file: written to a memfd and read through /proc/self/fd/N,
 * loaded over the defaults. An independent model of the rules (config.h, config_keys.h,
 * garudad(8) "CONFIGURATION") says accept or refuse: a NUL byte (its offset), a string
 * holding \u0000, text cJSON does not take (the JSON oracle), a top level that is no
 * object, then each member in order: a name given twice in one object, a key given
 * twice in any spelling ({"quota.uid.segments": 1} is the nested key too), an unknown
 * key, a section that is no object, a value of the wrong type or out of its row's
 * bounds (numbers integral in [lo, hi]; a gid below 2^32 - 1; an absolute path under
 * 108 bytes; a plan garuda_plan_parse() takes, not block; the names of LOOP, LEVEL,
 * WORDWAIT); a file of 1 MiB - 4096 bytes or more. Aborts (a finding) when:
 *   - the loader accepts what the model refuses or refuses what it accepts, returns
 *     other than 0 / -1, or refuses without a message naming the file, the kind the
 *     model expects (the NUL's offset; "KEY: reason" with the first offending key in
 *     document order, cut to 127 bytes as the loader cuts it);
 *   - an accepted file leaves any key other than the model's value (the defaults for
 *     keys not given), keys_set other than the keys given, or config_path unset;
 *   - config_to_json() of the result (null members dropped), loaded as a file again,
 *     is refused or gives other values; or anything leaks (LeakSanitizer).
 * Built with -fsanitize=fuzzer,address,undefined under -Dfuzz=true (clang); the same
 * function replays tests/fuzz/corpus-config in the ordinary test suite
 * (test_corpus_config.c).
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "config_keys.h"
#include "plan.h"
#include "jsontext.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


#define FILE_REFUSED_AT ((1u << 20) - 4096u) /* bytes: config_load_file's buffer bound */
#define KEY_CUT		127u		     /* bytes of a key the loader's messages keep */

/* The key table as config_keys.h states it: the spec the model reads. */
struct key_row {
	const char *key;
	enum garuda_cfg_type type;
	size_t off;
	uint64_t lo, hi;
	const char *legacy;
};
#define KEY_ROW_(key, flag, type, field, lo, hi, reload, legacy, help)                             \
	{ key, GARUDA_CFG_##type, offsetof(struct config, field), lo, hi, legacy },
static const struct key_row keys[] = { GARUDA_CONFIG_KEYS(KEY_ROW_) };
#undef KEY_ROW_
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const char *const loop_names[] = { "auto", "io_uring", "epoll" }; /* enum order */
static const struct {
	const char *name;
	int level;
} level_names[] = { { "err", LOG_ERR },
		    { "warning", LOG_WARNING },
		    { "notice", LOG_NOTICE },
		    { "info", LOG_INFO },
		    { "debug", LOG_DEBUG } };

enum outcome {
	OK,
	E_BIG,
	E_NUL,
	E_NUL_ESCAPE,
	E_CONTROL,
	E_JSON,
	E_TOP,
	E_KEY
};

struct model {
	enum outcome out;
	size_t nul_at;
	size_t ctl_at;     /* E_CONTROL: the offset of the control character */
	unsigned ctl_byte; /* and the character */
	char *key;    /* E_KEY: the dotted key (malloc'ed) */
	char why[96]; /* E_KEY: what the message says of it */
	uint64_t set; /* bit i: keys[i] given */
	uint64_t num[NKEYS];
	const char *str[NKEYS]; /* into the parsed tree, or gid[] */
	char gid[NKEYS][24];
	struct garuda_plan plan;
};

static bool is_uint(const cJSON *v, uint64_t lo, uint64_t hi, uint64_t *out)
{
	if (!cJSON_IsNumber(v))
		return false;
	double d = v->valuedouble;
	if (!(d >= (double)lo && d <= (double)hi))
		return false;
	*out = (uint64_t)d;
	return (double)*out == d;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* keys[i]'s value from v into m: NULL, or why it is refused */
static const char *model_value(struct model *m, size_t i, const cJSON *v)
{
	const struct key_row *k = &keys[i];
	uint64_t n;
	if (k->type == GARUDA_CFG_U32 || k->type == GARUDA_CFG_U64) {
		if (!cJSON_IsNumber(v))
			return "expected a number";
		if (!is_uint(v, k->lo, k->hi, &n)) {
			snprintf(m->why, sizeof(m->why), "must be an integer in [%llu, %llu]",
				 (unsigned long long)k->lo, (unsigned long long)k->hi);
			return m->why;
		}
		m->num[i] = n;
		return NULL;
	}
	if (k->type == GARUDA_CFG_GROUP && cJSON_IsNumber(v)) {
		if (!is_uint(v, 0, 0xfffffffeu, &n))
			return "must be an integer in [0, 4294967294]";
		snprintf(m->gid[i], sizeof(m->gid[i]), "%llu", (unsigned long long)n);
		m->str[i] = m->gid[i];
		return NULL;
	}
	if (!cJSON_IsString(v))
		return "expected a string";
	const char *s = v->valuestring;
	switch (k->type) {
	case GARUDA_CFG_PATH:
		if (s[0] != '/' || strlen(s) >= 108)
			return "must be an absolute path shorter than 108 bytes";
		break;
	case GARUDA_CFG_GROUP:
		if (all_digits(s) && (strlen(s) > 10 || strtoull(s, NULL, 10) >= 0xffffffffu))
			return "a gid must be below 4294967295";
		break;
	case GARUDA_CFG_STRING:
		break;
	case GARUDA_CFG_LOOP:
		for (n = 0; n < 3 && strcmp(s, loop_names[n]) != 0; n++)
			;
		if (n == 3)
			return "must be auto, io_uring or epoll";
		m->num[i] = n;
		return NULL;
	case GARUDA_CFG_PLAN:
		if (garuda_plan_parse(s, &m->plan, NULL, 0) != 0 ||
		    m->plan.kind == GARUDA_PLAN_BLOCK)
			return "(BAD_PLAN)";
		return NULL;
	case GARUDA_CFG_LEVEL:
		for (n = 0; n < 5 && strcmp(s, level_names[n].name) != 0; n++)
			;
		if (n == 5)
			return "must be err, warning, notice, info or debug";
		m->num[i] = (uint64_t)level_names[n].level;
		return NULL;
	case GARUDA_CFG_WORDWAIT:
		if (strcmp(s, "auto") != 0 && strcmp(s, "off") != 0)
			return "must be auto or off";
		m->num[i] = strcmp(s, "auto") == 0;
		return NULL;
	default:
		CHECK(!"a key type the model does not know");
	}
	m->str[i] = s;
	return NULL;
}

static int key_index(const char *key)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].key, key) == 0)
			return (int)i;
	return -1;
}

/* Is key a section: some key starts with "key." */
static bool is_section(const char *key)
{
	size_t n = strlen(key);
	for (size_t i = 0; i < NKEYS; i++)
		if (strncmp(keys[i].key, key, n) == 0 && keys[i].key[n] == '.')
			return true;
	return false;
}

/* The members of obj in order, under prefix; false at the first refused one (m->key). */
static bool model_members(struct model *m, const cJSON *obj, const char *prefix)
{
	for (const cJSON *it = obj->child; it; it = it->next) {
		char *key;
		CHECK(asprintf(&key, "%s%s%s", prefix, *prefix ? "." : "", it->string) >= 0);
		const char *why = NULL;
		for (const cJSON *p = obj->child; p != it && !why; p = p->next)
			if (strcmp(p->string, it->string) == 0)
				why = "given twice";
		int i = why ? -1 : key_index(key);
		if (why) {
		} else if (i >= 0 && (m->set >> i & 1)) {
			why = "given twice"; /* the same key in another spelling */
		} else if (i >= 0) {
			why = model_value(m, (size_t)i, it);
			if (!why)
				m->set |= 1ull << i;
		} else if (is_section(key)) {
			if (!cJSON_IsObject(it)) {
				why = "expected an object";
			} else if (!model_members(m, it, key)) {
				free(key);
				return false;
			}
		} else {
			why = "unknown key";
		}
		if (why) {
			m->out = E_KEY;
			m->key = key;
			if (why != m->why)
				snprintf(m->why, sizeof(m->why), "%s", why);
			return false;
		}
		free(key);
	}
	return true;
}

/* Whether a string of the (well-formed) JSON text t holds the escape \u0000 */
static bool escaped_nul(const char *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (t[i] != '"')
			continue;
		for (i++; i < n && t[i] != '"'; i++) {
			if (t[i] != '\\')
				continue;
			if (n - i >= 6 && memcmp(t + i + 1, "u0000", 5) == 0)
				return true;
			i++;
		}
	}
	return false;
}

/* The model's verdict on text (NUL-terminated, n bytes); *root: the tree m points into. */
static void model(struct model *m, const char *text, size_t n, cJSON **root)
{
	memset(m, 0, sizeof(*m));
	*root = NULL;
	const char *nul = memchr(text, '\0', n);
	if (n >= FILE_REFUSED_AT) {
		m->out = E_BIG;
	} else if (nul) {
		m->out = E_NUL;
		m->nul_at = (size_t)(nul - text);
	} else if (json_text_control_at(text, n) < n) {
		m->out = E_CONTROL; /* cJSON takes them; its seeds pin the rule (bad-control-*) */
		m->ctl_at = json_text_control_at(text, n);
		m->ctl_byte = (unsigned char)text[m->ctl_at];
	} else if (!(*root = cJSON_ParseWithOpts(text, NULL, 1))) {
		m->out = E_JSON; /* or the \u0000 message: the loader looks for that first */
	} else if (escaped_nul(text, n)) {
		m->out = E_NUL_ESCAPE;
	} else if (!cJSON_IsObject(*root)) {
		m->out = E_TOP;
	} else {
		m->out = model_members(m, *root, "") ? OK : E_KEY;
	}
}

/* Load len bytes as a config file over c; path gets its name. */
static int load(struct config *c, const void *bytes, size_t len, char *path, size_t cap, char **err)
{
	int fd = memfd_create("fuzz-config", MFD_CLOEXEC);
	CHECK(fd >= 0);
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, (const char *)bytes + off, len - off);
		CHECK(w > 0);
		off += (size_t)w;
	}
	snprintf(path, cap, "/proc/self/fd/%d", fd);
	*err = NULL;
	int r = config_load_file(c, path, err);
	close(fd);
	return r;
}

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void check_refusal(const struct model *m, const char *path, const char *err, size_t n)
{
	CHECK(err != NULL && strstr(err, path) != NULL);
	char want[256];
	switch (m->out) {
	case E_BIG:
		snprintf(want, sizeof(want), "config file %s: larger than 1 MiB", path);
		CHECK(strcmp(err, want) == 0);
		return;
	case E_NUL:
		snprintf(want, sizeof(want),
			 "config file %s: a NUL byte at offset %zu (a config file is JSON text)",
			 path, m->nul_at);
		CHECK(strcmp(err, want) == 0);
		return;
	case E_NUL_ESCAPE:
	case E_CONTROL:
	case E_JSON:
		snprintf(want, sizeof(want),
			 "config file %s: a string holds \\u0000 (NUL), which no value may", path);
		if (strcmp(err, want) == 0)
			return;
		if (m->out == E_CONTROL) { /* the loader looks for \u0000 first */
			snprintf(want, sizeof(want),
				 "config file %s: invalid JSON: a control character (byte 0x%02x) at "
				 "offset %zu ", path, m->ctl_byte, m->ctl_at);
			CHECK(starts(err, want));
			return;
		}
		CHECK(m->out == E_JSON); /* in malformed text, either */
		snprintf(want, sizeof(want), "config file %s: invalid JSON near byte ", path);
		CHECK(starts(err, want));
		char *end;
		unsigned long long at = strtoull(err + strlen(want), &end, 10);
		CHECK(*end == '\0' && at <= n);
		return;
	case E_TOP:
		snprintf(want, sizeof(want), "%s: the top level must be a JSON object", path);
		CHECK(strcmp(err, want) == 0);
		return;
	case E_KEY: {
		size_t kl = strlen(m->key) < KEY_CUT ? strlen(m->key) : KEY_CUT;
		snprintf(want, sizeof(want), "%s: %.*s: ", path, (int)kl, m->key);
		CHECK(starts(err, want));
		CHECK(strstr(err + strlen(want), m->why) != NULL);
		return;
	}
	case OK:
		break;
	}
	CHECK(!"refused what the model accepts");
}

static const void *field(const struct config *c, size_t i)
{
	return (const char *)c + keys[i].off;
}

static bool same_value(const struct config *a, const struct config *b, size_t i)
{
	const void *x = field(a, i), *y = field(b, i);
	switch (keys[i].type) {
	case GARUDA_CFG_PATH:
	case GARUDA_CFG_GROUP:
	case GARUDA_CFG_STRING: {
		const char *s = *(char *const *)x, *t = *(char *const *)y;
		return s == t || (s && t && strcmp(s, t) == 0);
	}
	case GARUDA_CFG_U32:
		return *(const uint32_t *)x == *(const uint32_t *)y;
	case GARUDA_CFG_U64:
		return *(const uint64_t *)x == *(const uint64_t *)y;
	case GARUDA_CFG_PLAN:
		return garuda_plan_equal(x, y);
	case GARUDA_CFG_LOOP:
		return *(const enum event_loop_kind *)x == *(const enum event_loop_kind *)y;
	case GARUDA_CFG_LEVEL:
		return *(const int *)x == *(const int *)y;
	case GARUDA_CFG_WORDWAIT:
		return *(const bool *)x == *(const bool *)y;
	}
	return false;
}

/* c (accepted) holds the model's values, the defaults elsewhere */
static void check_values(const struct config *c, const struct model *m, const char *path)
{
	struct config def;
	config_defaults(&def);
	CHECK(c->keys_set == m->set);
	CHECK(c->config_path && strcmp(c->config_path, path) == 0);
	CHECK(!c->file_chosen && !c->check_only);
	for (size_t i = 0; i < NKEYS; i++) {
		const void *f = field(c, i);
		if (!(m->set >> i & 1)) {
			CHECK(same_value(c, &def, i));
			continue;
		}
		switch (keys[i].type) {
		case GARUDA_CFG_PATH:
		case GARUDA_CFG_GROUP:
		case GARUDA_CFG_STRING:
			CHECK(*(char *const *)f && strcmp(*(char *const *)f, m->str[i]) == 0);
			break;
		case GARUDA_CFG_U32:
			CHECK(*(const uint32_t *)f == m->num[i]);
			break;
		case GARUDA_CFG_U64:
			CHECK(*(const uint64_t *)f == m->num[i]);
			break;
		case GARUDA_CFG_PLAN:
			CHECK(garuda_plan_equal(f, &m->plan));
			CHECK(garuda_plan_check(f, NULL, 0) == 0);
			break;
		case GARUDA_CFG_LOOP:
			CHECK(*(const enum event_loop_kind *)f == (enum event_loop_kind)m->num[i]);
			break;
		case GARUDA_CFG_LEVEL:
			CHECK(*(const int *)f == (int)m->num[i]);
			break;
		case GARUDA_CFG_WORDWAIT:
			CHECK(*(const bool *)f == (bool)m->num[i]);
			break;
		}
	}
	config_free(&def);
}

/* The item at a dotted key of obj, or NULL */
static cJSON *at_key(cJSON *obj, const char *key)
{
	char part[64];
	for (const char *dot; obj && (dot = strchr(key, '.')); key = dot + 1) {
		snprintf(part, sizeof(part), "%.*s", (int)(dot - key), key);
		obj = cJSON_GetObjectItemCaseSensitive(obj, part);
	}
	return obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

/* config_to_json(c) holds every key (a legacy one when set; a path not resolved: null);
 * without the nulls, loaded as a file, it gives c's values again */
static void check_round_trip(const struct config *c)
{
	cJSON *obj = cJSON_CreateObject();
	CHECK(obj != NULL);
	config_to_json(c, obj);
	uint64_t want = 0;
	for (size_t i = 0; i < NKEYS; i++) {
		cJSON *v = at_key(obj, keys[i].key);
		if (keys[i].legacy && !(c->keys_set >> i & 1)) {
			CHECK(v == NULL);
			continue;
		}
		CHECK(v != NULL);
		bool unset = keys[i].type == GARUDA_CFG_PATH && !*(char *const *)field(c, i);
		CHECK(cJSON_IsNull(v) == unset);
		if (unset) {
			cJSON_DeleteItemFromObjectCaseSensitive(obj,
								keys[i].key); /* top-level keys */
			CHECK(strchr(keys[i].key, '.') == NULL);
		} else {
			want |= 1ull << i;
		}
	}
	char *text = cJSON_PrintUnformatted(obj);
	cJSON_Delete(obj);
	CHECK(text != NULL);
	struct config again;
	config_defaults(&again);
	char path[64], *err;
	int r = load(&again, text, strlen(text), path, sizeof(path), &err);
	if (r != 0)
		fprintf(stderr, "fuzz_config: %s: %s\n", text, err ? err : "?");
	CHECK(r == 0 && err == NULL);
	CHECK(again.keys_set == want);
	for (size_t i = 0; i < NKEYS; i++)
		CHECK(same_value(&again, c, i));
	free(text);
	config_free(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* the model's copy: NUL-terminated (the loader's own is its buffer) */
	char *text = malloc(size + 1);
	CHECK(text != NULL);
	if (size)
		memcpy(text, data, size);
	text[size] = '\0';
	struct model m;
	cJSON *root;
	model(&m, text, size, &root);

	struct config c;
	config_defaults(&c);
	char path[64], *err;
	int r = load(&c, data, size, path, sizeof(path), &err);
	CHECK(r == 0 || r == -1);
	if (r == 0) {
		if (m.out != OK)
			fprintf(stderr, "fuzz_config: accepted; the model refuses (%d) %s: %s\n",
				(int)m.out, m.key ? m.key : "", m.why);
		CHECK(m.out == OK);
		CHECK(err == NULL);
		check_values(&c, &m, path);
		check_round_trip(&c);
	} else {
		check_refusal(&m, path, err, size);
	}
	free(err);
	config_free(&c);
	free(m.key);
	cJSON_Delete(root);
	free(text);
	return 0;
}
