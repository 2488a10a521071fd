/* benchd.c — see benchd.h. */
#include "benchd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* Does the garudad at path take the config key quota.daemon.armed (its
 * --list-config-keys)? Older ones (before quota.daemon) refuse the whole file. */
static bool knows_daemon_quota(const char *path)
{
	static char known_for[4096];
	static bool known;
	if (strcmp(known_for, path) == 0)
		return known;
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "'%s' --list-config-keys 2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	char line[512];
	known = false;
	while (p && fgets(line, sizeof(line), p))
		known |= strncmp(line, "quota.daemon.armed ", 19) == 0;
	if (p)
		pclose(p);
	snprintf(known_for, sizeof(known_for), "%s", path);
	return known;
}

int bd_start(struct bench *b, struct gd_daemon *d, const char *config_json)
{
	memset(d, 0, sizeof(*d));
	d->pid = -1;
	d->ctl_fd = -1;
	raise_nofile();
	/* a garudad from before quota.daemon (a baseline run with --daemon) gets the
	 * configuration without it: it holds no daemon-wide quota to raise */
	char *cfg = NULL;
	cJSON *j = cJSON_Parse(config_json);
	cJSON *q = cJSON_GetObjectItemCaseSensitive(j, "quota");
	if (cJSON_GetObjectItemCaseSensitive(q, "daemon") && !knows_daemon_quota(b->o.garudad)) {
		cJSON_DeleteItemFromObjectCaseSensitive(q, "daemon");
		cfg = cJSON_PrintUnformatted(j);
	}
	cJSON_Delete(j);
	struct gd_opts o = { .garudad = b->o.garudad, .config = cfg ? cfg : config_json, .quiet = true };
	int r = gd_launch(d, &o);
	free(cfg);
	if (r < 0) {
		bench_fail(b, "garudad: %s", d->err);
		gd_cleanup(d);
		return -1;
	}
	return 0;
}

int bd_stop(struct bench *b, struct gd_daemon *d)
{
	if (d->pid <= 0) {
		gd_cleanup(d);
		return 0;
	}
	if (gd_terminate(d) < 0) {
		bench_fail(b, "garudad: %s", d->err);
		return -1;
	}
	return 0;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

int bd_counters(struct gd_daemon *d, struct bd_counters *out)
{
	memset(out, 0, sizeof(*out));
	cJSON *st = gd_control_keep(d, "{\"request\":\"status\"}");
	if (!st)
		return -EIO;
	out->armed = num(st, "armed");
	out->completions = num(st, "completions");
	out->arms = num(st, "arms");
	out->clients = num(st, "clients");
	out->segments = num(st, "segments");
	cJSON_Delete(st);
	cJSON *sc = gd_control_keep(d, "{\"request\":\"scanners\"}");
	if (!sc)
		return -EIO;
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(sc, "scanners"), *it;
	cJSON_ArrayForEach(it, arr)
	{
		out->passes += num(it, "passes");
		out->parks += num(it, "parks");
		out->scanner_cpu_s += num(it, "cpu_s");
	}
	cJSON_Delete(sc);
	return 0;
}
