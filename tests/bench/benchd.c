/* benchd.c — see benchd.h. */
#include "benchd.h"

#include <errno.h>
#include <string.h>

#include "bench.h"

int bd_start(struct bench *b, struct gd_daemon *d, const char *config_json)
{
	memset(d, 0, sizeof(*d));
	d->pid = -1;
	d->ctl_fd = -1;
	raise_nofile();
	struct gd_opts o = { .garudad = b->o.garudad, .config = config_json, .quiet = true };
	if (gd_launch(d, &o) < 0) {
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
