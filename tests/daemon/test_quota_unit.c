/* test_quota_unit.c — daemon/quota.c's charges as pure code: no daemon, no socket.
 * Checked: the daemon scope (quota.daemon.*) holds every uid's charges together, so
 * two uids each inside their own quota are refused once their sum passes it; a charge
 * the daemon scope refuses leaves nothing taken in the narrower scopes (every scope or
 * none); a refusal names the narrowest scope that refused, and counts in that scope's
 * row of the uid's refusals; a release gives back to every scope it was taken from,
 * so the daemon scope's usage is always the sum of the connections'.
 */
#include <criterion/criterion.h>

#include <string.h>

#include "config.h"
#include "errcode.h"
#include "fdcheck.h"
#include "quota.h"

TestSuite(quota_unit, .init = fdcheck_begin, .fini = fdcheck_end);

static const struct quota_limits roomy = {
	.segments = 100, .lines = 1000, .bindings = 100, .armed = 100, .outbox_bytes = 100000,
	.connections = 100, .points = 100,
};

static void limits(struct config *cfg, uint32_t conn_armed, uint32_t uid_armed, uint32_t daemon_armed)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->quota_connection = cfg->quota_uid = cfg->quota_cgroup = cfg->quota_daemon = roomy;
	cfg->quota_connection.armed = conn_armed;
	cfg->quota_uid.armed = uid_armed;
	cfg->quota_daemon.armed = daemon_armed;
}

static uint64_t used(const struct quota_usage *u, enum quota_kind k)
{
	return atomic_load(&u->used[k]);
}

Test(quota_unit, two_uids_inside_their_own_quota_are_refused_by_the_daemons)
{
	struct quota_table t = { 0 };
	struct config cfg;
	limits(&cfg, 10, 10, 15);
	struct quota_account a = { .uid = quota_uid_get(&t, 1000) }, b = { .uid = quota_uid_get(&t, 2000) };
	cr_assert(a.uid && b.uid && a.uid != b.uid);

	cr_assert_eq(quota_charge(&a, &cfg, Q_ARMED, 10), 0, "a: its whole uid quota");
	cr_assert_eq(quota_charge(&b, &cfg, Q_ARMED, 5), 0, "b: the daemon's rest");
	char why[256];
	int r = quota_charge_explain(&b, &cfg, Q_ARMED, 1, why, sizeof(why));
	cr_assert_eq(r, -GARUDA_E_QUOTA, "b at 5 of its 10, over the daemon's 15");
	cr_assert_str_eq(why, "quota.daemon.armed exceeded: limit 15, 15 in use, 1 more asked");
	/* nothing of the refused charge stays in b's connection or uid scope */
	cr_assert_eq(used(&b.usage, Q_ARMED), 5);
	cr_assert_eq(used(&b.uid->usage, Q_ARMED), 5);
	cr_assert_eq(used(&t.usage, Q_ARMED), 15);
	/* counted as a refusal by quota.daemon.armed in b's uid, none in a's */
	cr_assert(b.uid->refusals);
	cr_assert_eq(b.uid->refusals->n[QS_DAEMON][Q_ARMED], 1);
	cr_assert_eq(b.uid->refusals->n[QS_UID][Q_ARMED], 0);
	cr_assert_null(a.uid->refusals);

	/* what a gives back, b may take */
	quota_release(&a, Q_ARMED, 3);
	cr_assert_eq(used(&t.usage, Q_ARMED), 12);
	cr_assert_eq(quota_charge(&b, &cfg, Q_ARMED, 3), 0);
	cr_assert_eq(quota_charge(&b, &cfg, Q_ARMED, 1), -GARUDA_E_QUOTA);
	quota_release(&a, Q_ARMED, 7);
	quota_release(&b, Q_ARMED, 8);
	for (unsigned k = 0; k < Q_KINDS_; k++)
		cr_assert_eq(used(&t.usage, k), 0, "%s left in the daemon scope", quota_kind_name(k));
	quota_table_free(&t);
}

Test(quota_unit, a_refusal_names_the_narrowest_scope_that_refused)
{
	struct quota_table t = { 0 };
	struct config cfg;
	limits(&cfg, 4, 6, 6); /* uid and daemon both full at 6: the uid's key is named */
	struct quota_account a = { .uid = quota_uid_get(&t, 1000) }, a2 = { .uid = quota_uid_get(&t, 1000) };
	cr_assert_eq(a.uid, a2.uid, "one record per uid");
	cr_assert_eq(quota_charge(&a, &cfg, Q_ARMED, 4), 0);
	char why[256];
	cr_assert_eq(quota_charge_explain(&a, &cfg, Q_ARMED, 1, why, sizeof(why)), -GARUDA_E_QUOTA);
	cr_assert_str_eq(why, "quota.connection.armed exceeded: limit 4, 4 in use, 1 more asked");
	cr_assert_eq(quota_charge(&a2, &cfg, Q_ARMED, 2), 0);
	cr_assert_eq(quota_charge_explain(&a2, &cfg, Q_ARMED, 1, why, sizeof(why)), -GARUDA_E_QUOTA);
	cr_assert_str_eq(why, "quota.uid.armed exceeded: limit 6, 6 in use, 1 more asked");
	cr_assert_eq(a.uid->refusals->n[QS_CONNECTION][Q_ARMED], 1);
	cr_assert_eq(a.uid->refusals->n[QS_UID][Q_ARMED], 1);
	cr_assert_eq(a.uid->refusals->n[QS_DAEMON][Q_ARMED], 0);
	quota_release(&a, Q_ARMED, 4);
	quota_release(&a2, Q_ARMED, 2);
	cr_assert_eq(used(&t.usage, Q_ARMED), 0);
	quota_table_free(&t);
}

/* every kind is charged to the daemon scope, connections too; each against its key */
Test(quota_unit, every_kind_counts_in_the_daemon_scope)
{
	struct quota_table t = { 0 };
	struct config cfg;
	limits(&cfg, 100, 100, 100);
	struct quota_account a = { .uid = quota_uid_get(&t, 1) }, b = { .uid = quota_uid_get(&t, 2) };
	for (unsigned k = 0; k < Q_KINDS_; k++) {
		if (k == Q_CONNECTIONS)
			continue; /* a connection's own scope holds one */
		uint64_t lim = quota_limit(&cfg.quota_daemon, k);
		cr_assert_eq(quota_charge(&a, &cfg, k, lim / 2), 0);
		cr_assert_eq(quota_charge(&b, &cfg, k, lim - lim / 2), 0);
		cr_assert_eq(quota_charge(&b, &cfg, k, 1), -GARUDA_E_QUOTA, "%s: over the daemon's %llu",
			     quota_kind_name(k), (unsigned long long)lim);
		quota_release(&a, k, lim / 2);
		quota_release(&b, k, lim - lim / 2);
		cr_assert_eq(used(&t.usage, k), 0);
	}
	cfg.quota_connection.connections = 1;
	cfg.quota_daemon.connections = 1;
	cr_assert_eq(quota_charge(&a, &cfg, Q_CONNECTIONS, 1), 0);
	char why[256];
	cr_assert_eq(quota_charge_explain(&b, &cfg, Q_CONNECTIONS, 1, why, sizeof(why)), -GARUDA_E_QUOTA);
	cr_assert_str_eq(why, "quota.daemon.connections exceeded: limit 1, 1 in use, 1 more asked");
	quota_release(&a, Q_CONNECTIONS, 1);
	quota_table_free(&t);
}
