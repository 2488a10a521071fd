/* garctl.c — garctl's entry point: options, the command table, exit codes.
 *
 * garctl talks to garudad's control socket only (one JSON object per datagram) and
 * never links libgaruda. Exit codes: 0 ok, 1 a daemon error or no daemon (a message
 * says which, naming the socket path and what admits a peer), 2 usage. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "garctl.h"

struct command {
	const char *name;
	int min_args, max_args;
	int (*fn)(struct conn *c, const struct options *o, char **args);
	bool json;        /* has a JSON form */
	const char *ids;  /* per argument: 'c' a client id, 's' a segment id, '-' free */
	const char *usage; /* garctl CMD --help / garctl help CMD: synopsis line, then text */
};

static const struct command commands[] = {
	{ "status", 0, 0, cmd_status, true, "",
	  "status\nDaemon state and totals: version, pid, event loop, uptime, log level, config\nfile, warnings (start-up conditions to fix), clients, segments, bindings, armed,\narms, completions by form, sessions, errors, quota refusals, scanners.\nOptions: -j[MODE]." },
	{ "clients", 0, 0, cmd_clients, true, "",
	  "clients\nConnected clients: id, pid, uid, command, segments, bindings, armed, arms,\ncompletions, wake latency (see garctl(1) on what the figures mean).\nOptions: -j[MODE], --no-legend, --no-pager." },
	{ "segments", 1, 1, cmd_segments, true, "c",
	  "segments CLIENT\nThe segments of client CLIENT (its id from garctl clients).\nOptions: -j[MODE], --no-legend, --no-pager." },
	{ "lines", 2, 2, cmd_lines, true, "cs",
	  "lines CLIENT SEGMENT\nThe words of segment SEGMENT of client CLIENT: values, bindings, armed targets.\nOptions: -j[MODE], --no-legend, --no-pager." },
	{ "scanners", 0, 0, cmd_scanners, true, "",
	  "scanners\nScanner threads: load, CPU time, wake latency, the hardware word wait of spin\nsteps and how many parked in it, how late timed sleeps woke (TIMER99).\nOptions: -j[MODE], --no-legend, --no-pager." },
	{ "points", 1, 1, cmd_points, true, "c",
	  "points CLIENT\nThe deadline-estimator points of client CLIENT: key, samples, exact/censored,\nprediction and next sleep.\nOptions: -j[MODE], --no-legend, --no-pager." },
	{ "config", 0, 0, cmd_config, true, "",
	  "config\nThe running configuration (after the file and flags).\nOptions: -j[MODE]." },
	{ "metrics", 0, 0, cmd_metrics, true, "",
	  "metrics\nCounters, gauges and histograms as Prometheus text (-j: as JSON)." },
	{ "top", 0, 0, cmd_top, true, "",
	  "top\nCompletions/s, armed, CPU, each client's scanner cost (word loads/s, scan time\nas % of a core) and the scanner's look gap (GAP50/GAP99: an upper bound on word\nreached -> seen, not a client's wake latency), refreshed every --delay seconds.\nOptions: -d SECONDS, -b (frame after frame, each headed by its UTC time, instead\nof redrawing), -j (one JSON object per frame per line), -n N (stop after N frames).\nOn a terminal, q quits." },
	{ "disconnect", 1, 1, cmd_disconnect, true, "c",
	  "disconnect CLIENT\nEnd client CLIENT's session. libgaruda reconnects at once (a new session id):\nthis ends a session, it does not ban a client." },
	{ "log-level", 0, 1, cmd_log_level, true, "-",
	  "log-level [LEVEL]\nShow the log level, or set it to LEVEL: err, warning, notice, info or debug\n(until the next reload or restart)." },
	{ "reload", 0, 0, cmd_reload, true, "",
	  "reload\nRe-read garudad's config file (as SIGHUP), from the defaults: a key removed from\nthe file returns to its default. Answers once the new configuration is in force;\na bad file is refused, naming the key (exit 1), and the running one is kept." },
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: garctl [OPTIONS] COMMAND [ARGS]\n"
		"Inspect and steer garudad through its control socket.\n\n"
		"Commands:\n"
		"  status                 daemon state and totals\n"
		"  clients                connected clients\n"
		"  segments CLIENT        segments of a client\n"
		"  lines CLIENT SEGMENT   words of a segment: values, bindings, armed targets\n"
		"  scanners               scanner threads: load, sleeps/spins, word wait, exact/censored, CPU, latency\n"
		"  points CLIENT          a client's deadline-estimator points and their predictions\n"
		"  config                 the running configuration\n"
		"  metrics                counters, gauges and histograms as Prometheus text\n"
		"  top                    completions/s, armed, wake latency and CPU, refreshed\n"
		"  disconnect CLIENT      end a client's session\n"
		"  log-level [LEVEL]      show or set the log level (err, warning, notice, info, debug)\n"
		"  reload                 re-read the daemon's config file\n"
		"  help [COMMAND]         this help, or a command's (also: garctl COMMAND --help)\n\n"
		"Options:\n"
		"  -s, --socket=PATH      control socket (default $GARUDA_CONTROL_SOCKET; else\n"
		"                         control.sock beside $GARUDA_SOCKET; else, not root,\n"
		"                         $XDG_RUNTIME_DIR/garuda/control.sock if it exists;\n"
		"                         else " GARCTL_DEFAULT_SOCKET ")\n"
		"  -j, --json[=MODE]      JSON output: pretty or short (default: pretty on a\n"
		"                         terminal, short otherwise)\n"
		"  -o, --output=FORMAT    json (as -j) or table (the default)\n"
		"      --no-legend        print no header row\n"
		"      --no-pager         do not pipe output into a pager\n"
		"  -d, --delay=SECONDS    top: time between refreshes (default 1)\n"
		"  -b, --batch            top: print frame after frame instead of redrawing\n"
		"  -n, --iterations=N     top: stop after N frames\n"
		"  -t, --timeout=SECONDS  wait this long for each reply (default 10, 0 = forever)\n"
		"  -h, --help             show this help\n"
		"      --version          show the version\n\n"
		"Exit status: 0 ok, 1 daemon error or no daemon, 2 usage.\n"
		"See garctl(1).\n");
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static int command_help(const struct command *cmd)
{
	const char *nl = strchr(cmd->usage, '\n');
	printf("Usage: garctl [OPTIONS] %.*s\n%s\n", (int)(nl - cmd->usage), cmd->usage, nl + 1);
	printf("Common options: -s PATH (control socket), -t SECONDS (reply timeout).\n"
	       "See garctl --help and garctl(1).\n");
	return 0;
}

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "garctl: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'garctl --help'.\n");
	return 2;
}

/* Fewer arguments than cmd needs: name the first one missing (the synopsis's word) and
 * what it is, with the command's usage line. */
static int missing_argument(const struct command *cmd, int nargs)
{
	const char *p = cmd->usage, *nl = strchr(p, '\n');
	for (int i = 0; i <= nargs && p < nl; i++) { /* skip the name and the given ones */
		p += strcspn(p, " \n");
		p += *p == ' ';
	}
	int len = (int)strcspn(p, " \n");
	const char *what = "";
	if (len == 6 && strncmp(p, "CLIENT", 6) == 0)
		what = " (a client id: see garctl clients)";
	else if (len == 7 && strncmp(p, "SEGMENT", 7) == 0)
		what = " (a segment id: see garctl segments CLIENT)";
	fprintf(stderr, "garctl: %s: missing argument %.*s%s\nUsage: garctl [OPTIONS] %.*s\n"
			"Try 'garctl %s --help'.\n", cmd->name, len, p, what, (int)(nl - cmd->usage),
		cmd->usage, cmd->name);
	return 2;
}

static bool parse_seconds(const char *s, double lo, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (!*s || *end || !(v >= lo && v <= 86400))
		return false;
	*out = v;
	return true;
}

int main(int argc, char **argv)
{
	enum { O_NO_LEGEND = 256, O_NO_PAGER, O_VERSION };
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", optional_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "no-legend", no_argument, NULL, O_NO_LEGEND },
		{ "no-pager", no_argument, NULL, O_NO_PAGER },
		{ "delay", required_argument, NULL, 'd' },
		{ "batch", no_argument, NULL, 'b' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, O_VERSION },
		{ 0 },
	};
	struct options o = {
		.socket = NULL,
		.legend = true,
		.pager = true,
		.delay_s = 1,
		.timeout_s = 10,
	};
	static char resolved[108];
	if (garuda_socket_path(GARUDA_SOCKET_CONTROL, resolved, sizeof(resolved), &o.socket_why) < 0) {
		fprintf(stderr, "garctl: the control socket path from the environment is longer than 107 bytes\n");
		return 2;
	}
	o.socket = resolved;
	bool json = false, help = false;
	const char *json_mode = NULL;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:j::o:d:bn:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			o.socket = optarg;
			o.socket_why = "--socket";
			break;
		case 'j':
			json = true;
			json_mode = optarg;
			break;
		case 'o': /* -o json|table: the kubectl/systemctl spelling of -j */
			if (strcmp(optarg, "json") == 0)
				json = true, json_mode = NULL;
			else if (strcmp(optarg, "table") == 0)
				json = false;
			else
				return usage_error("--output: json or table, not \"%s\"", optarg);
			break;
		case O_NO_LEGEND:
			o.legend = false;
			break;
		case O_NO_PAGER:
			o.pager = false;
			break;
		case 'd':
			if (!parse_seconds(optarg, 0.01, &o.delay_s))
				return usage_error("--delay: seconds between 0.01 and 86400, not \"%s\"", optarg);
			break;
		case 'b':
			o.batch = true;
			break;
		case 'n': {
			char *end;
			long v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v < 1)
				return usage_error("--iterations: a number of frames, at least 1, not \"%s\"", optarg);
			o.iterations = v;
			break;
		}
		case 't':
			if (!parse_seconds(optarg, 0, &o.timeout_s))
				return usage_error("--timeout: seconds between 0 and 86400, not \"%s\"", optarg);
			break;
		case 'h':
			help = true;
			break;
		case O_VERSION:
			printf("garctl " GARUDA_VERSION "\n");
			return 0;
		case ':':
			return usage_error("option %s needs an argument", argv[optind - 1]);
		default:
			return usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	if (json) {
		if (!json_mode)
			o.json = isatty(STDOUT_FILENO) ? JSON_PRETTY : JSON_SHORT;
		else if (strcmp(json_mode, "pretty") == 0)
			o.json = JSON_PRETTY;
		else if (strcmp(json_mode, "short") == 0)
			o.json = JSON_SHORT;
		else
			return usage_error("--json: pretty or short, not \"%s\"", json_mode);
	}
	/* garctl --help, garctl CMD --help, garctl help [CMD] */
	bool help_cmd = optind < argc && strcmp(argv[optind], "help") == 0;
	if (help || help_cmd) {
		const char *what = optind + help_cmd < argc ? argv[optind + help_cmd] : NULL;
		if (!what) {
			usage(stdout);
			return 0;
		}
		const struct command *hc = find_command(what);
		if (!hc)
			return usage_error("no such command \"%s\"", what);
		return command_help(hc);
	}
	if (optind >= argc)
		return usage_error("%s", "no command given");
	const char *name = argv[optind];
	const struct command *cmd = find_command(name);
	if (!cmd)
		return usage_error("unknown command \"%s\"", name);
	int nargs = argc - optind - 1;
	if (nargs < cmd->min_args)
		return missing_argument(cmd, nargs);
	if (nargs > cmd->max_args)
		return usage_error("%s: too many arguments", name);
	if (o.json != JSON_OFF && !cmd->json)
		return usage_error("%s has no JSON output (use clients -j and scanners -j)", name);
	for (int i = 0; i < nargs; i++) {
		uint64_t id;
		const char *arg = argv[optind + 1 + i];
		if ((cmd->ids[i] == 'c' || cmd->ids[i] == 's') && !parse_id(cmd->ids[i], arg, &id))
			return 2;
	}

	if (cmd->fn == cmd_log_level && nargs == 1) {
		static const char *const levels[] = { "err", "warning", "notice", "info", "debug" };
		bool known = false;
		for (size_t i = 0; i < 5; i++)
			known |= strcmp(argv[optind + 1], levels[i]) == 0;
		if (!known) {
			const char *a = argv[optind + 1];
			const char *hint = strcmp(a, "warn") == 0 ? " (did you mean warning?)"
					   : strcmp(a, "error") == 0 ? " (did you mean err?)" : "";
			fprintf(stderr, "garctl: log-level: \"%s\" is not a level: err, warning, notice, info or debug%s\n",
				a, hint);
			return 2;
		}
	}

	struct conn conn;
	int rc = conn_open(&conn, &o);
	if (rc)
		return rc;
	char *args[3] = { NULL, NULL, NULL };
	for (int i = 0; i < nargs; i++)
		args[i] = argv[optind + 1 + i];
	rc = cmd->fn(&conn, &o, args);
	conn_close(&conn);
	/* a write that failed earlier (a full disk, a closed pipe) left its mark in
	 * ferror(): fflush() alone sees only what was still buffered */
	errno = 0;
	bool flushed = fflush(stdout) == 0;
	if ((!flushed || ferror(stdout)) && rc == 0) {
		fprintf(stderr, "garctl: writing the output failed%s%s\n", !flushed && errno ? ": " : "",
			!flushed && errno ? strerror(errno) : "");
		rc = 1;
	}
	return rc;
}
