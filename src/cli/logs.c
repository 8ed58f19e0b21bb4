/* logs.c - `zerg logs`: read, filter and follow .zerg/monitor.jsonl.
 *
 * The JSON log is the one read (not monitor.log): every event is one
 * object a line, so filters work on fields instead of text.  The output is
 * either the human line exactly as monitor.log has it or the JSON line as
 * stored.  A line that does not parse (a torn write after a crash, a hand
 * edit) is skipped and counted, and the count is reported at the end.
 *
 * --since and --tail read the rotated files first (read_rotated), so a
 * window or the last N events span a rotation.  --follow reads appended
 * data every 200 ms; a partial last line is held until its newline
 * arrives, and a file that shrinks or is replaced is read again from its
 * start.
 *
 * --joblog (logs_joblog.c) reads every event, rotated files included,
 * through zerg_logs_each, and prints a table instead. */
#include "cli.h"
#include "cli/logs.h"
#include "cli/logs_runs.h"
#include "cli/task_output.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "zerg/clock.h"
#include "zerg/fsio.h"
#include "zerg/graph.h"
#include "zerg/json.h"
#include "zerg/log.h"

#define POLL_MS 200
#define CHUNK (64u << 10)
/* One event is a few hundred bytes; a longer "line" is damage. */
#define LINE_MAX_BYTES (16u << 20)
#define ORCH_FILTER (-2) /* --worker orch */

static const char usage[] =
    "usage: zerg logs [--worker N] [--task ID [--attempt N] [--raw]]\n"
    "                 [--event NAME]\n"
    "                 [--level L] [--since TIME] [--tail N] [--follow]\n"
    "                 [--json] [--all-runs]\n"
    "       zerg logs --joblog [--task ID] [--json]\n"
    "\n"
    "Prints the monitor log (.zerg/monitor.jsonl) as the lines of\n"
    "monitor.log, or as JSON.  Filters combine (all must match).  The log\n"
    "belongs to the project: without --feature it shows every feature's\n"
    "events; with --feature F only those of F's rushes.  Only each\n"
    "feature's current run is shown (its last fresh rush and the resumes\n"
    "of it), under a header line per run and per resume; --all-runs\n"
    "shows the earlier runs too.\n"
    "\n"
    "Options:\n"
    "  --worker N    events of worker N ('orch' for the orchestrator)\n"
    "  --task ID     events about task ID, then the output of its last\n"
    "                attempt (.zerg/logs/F/tasks/ID/attempt-N.log)\n"
    "  --attempt N   with --task: the output of attempt N\n"
    "                (an agent's as a transcript: what it said, each tool\n"
    "                call and result, how it ended, cost and tokens)\n"
    "  --raw         with --task: the output as it is, the agent's\n"
    "                stream-json events too\n"
    "  --event NAME  events named NAME (a comma-separated list allowed),\n"
    "                e.g. task_failed,worker_respawn\n"
    "  --level L     events at level L or above: DEBUG, INFO, WARN, ERROR\n"
    "  --since TIME  events from TIME on: 2026-02-03T05:41:55Z, or an age\n"
    "                such as 90s, 10m, 2h, 1d (rotated logs included)\n"
    "  --tail N      only the last N events (and output lines; rotated\n"
    "                logs included)\n"
    "  --follow      keep printing new events until Ctrl-C\n"
    "  --json        print the JSON lines as stored (no header lines)\n"
    "  --all-runs    every run in the log, not only the current one\n"
    "  --joblog      one tab-separated row per task attempt of the\n"
    "                feature's last run, in start order, under a header:\n"
    "                task attempt worker start runtime exit outcome\n"
    "                class cost commit; outcome is complete, failed,\n"
    "                crashed, reassigned, fenced or running (with --task\n"
    "                only that task's; with --json the rows as JSON lines)\n"
    "  -C DIR        run as if started in DIR\n"
    "  -h, --help    show this help\n"
    "\n"
    "Exit codes: 0 ok; 1 no log yet; 2 usage error.\n";

struct filter {
    const char *feature; /* --feature, NULL: any */
    int worker;          /* -1: any; ORCH_FILTER: the orchestrator */
    const char *task;
    const char *events; /* comma-separated, NULL: any */
    enum zerg_log_level min_level;
    int json, follow, color;
    int64_t since_ns; /* --since: events at or after (wall ns), 0: all */
    int follow_live;  /* --follow past the first read: print as they come */
    size_t tail;      /* --tail N: the last N lines only, 0: all */
    int attempt;      /* --attempt N of --task's output, 0: the last */
    int raw;          /* --raw: the output as written, no transcript */
    char **ring;      /* --tail: the last lines printed, in order */
    size_t nring, ring_at;
    int joblog;                  /* --joblog (logs_joblog.c) */
    int all_runs;                /* --all-runs */
    struct zerg_logs_runs *runs; /* set: headers, and earlier runs left out */
    int quiet;                   /* no warning of corrupt lines */
    zerg_logs_each_fn *each;     /* set: events go here, nothing is printed */
    void *each_ctx;
};

struct reader {
    int fd;
    char *buf; /* bytes not yet split into lines */
    size_t len, cap;
    size_t lineno;
    size_t corrupt, first_corrupt;
    int skipping; /* inside an over-long line */
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* ---- matching and printing -------------------------------------------- */

static int event_listed(const char *list, const char *ev)
{
    size_t n = strlen(ev);
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t k = comma ? (size_t)(comma - p) : strlen(p);
        if (k == n && strncmp(p, ev, n) == 0)
            return 1;
        p += k + (comma != NULL);
    }
    return 0;
}

static int matches(const struct filter *f, const zerg_json *rec,
                   enum zerg_log_level level)
{
    const zerg_json *w = zerg_json_get(rec, "worker");
    const char *task = zerg_json_as_str(zerg_json_get(rec, "task"));
    const char *ev = zerg_json_as_str(zerg_json_get(rec, "event"));
    if (level < f->min_level)
        return 0;
    if (f->worker == ORCH_FILTER && !zerg_json_is(w, ZERG_JSON_NULL))
        return 0;
    if (f->worker >= 0 && (!zerg_json_is(w, ZERG_JSON_NUMBER) ||
                           zerg_json_as_num(w, -1) != f->worker))
        return 0;
    int64_t ts_ns = 0;
    const char *ts = zerg_json_as_str(zerg_json_get(rec, "ts"));
    if (f->since_ns && (!ts || zerg_clock_parse_iso8601(ts, &ts_ns) < 0 ||
                        ts_ns < f->since_ns))
        return 0;
    const char *feat = zerg_json_as_str(zerg_json_get(rec, "feature"));
    if (f->feature && (!feat || strcmp(feat, f->feature) != 0))
        return 0;
    if (f->runs && !f->all_runs && zerg_logs_runs_earlier(f->runs, rec))
        return 0;
    if (f->task && (!task || strcmp(task, f->task) != 0))
        return 0;
    if (f->events && (!ev || !event_listed(f->events, ev)))
        return 0;
    return 1;
}

static const char *level_color(enum zerg_log_level level)
{
    return level == ZERG_LOG_ERROR   ? "\033[31m"
           : level == ZERG_LOG_WARN  ? "\033[33m"
           : level == ZERG_LOG_DEBUG ? "\033[2m"
                                     : "";
}

static void put_clean(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
}

/* The monitor.log form; control characters in the message become '?' so
 * a logged task error cannot drive the terminal. */
static void print_human(FILE *out, const struct filter *f, const zerg_json *rec,
                        enum zerg_log_level level)
{
    const zerg_json *w = zerg_json_get(rec, "worker");
    const char *ts = zerg_json_as_str(zerg_json_get(rec, "ts"));
    const char *msg = zerg_json_as_str(zerg_json_get(rec, "msg"));
    char who[24] = "ORCH";
    if (zerg_json_is(w, ZERG_JSON_NUMBER))
        snprintf(who, sizeof who, "W%.0f", zerg_json_as_num(w, 0));
    const char *on = f->color ? level_color(level) : "";
    put_clean(out, ts);
    fprintf(out, " [%s] %s[%s]%s ", who, on, zerg_log_level_name(level),
            *on ? "\033[0m" : "");
    put_clean(out, msg);
    fputc('\n', out);
}

/* --tail N: the line as it would print, kept in a ring of N. */
static void keep_for_tail(struct filter *f, const zerg_json *rec,
                          enum zerg_log_level level, const char *line,
                          size_t len)
{
    char *text = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&text, &n);
    if (!mem)
        return;
    if (f->json)
        fprintf(mem, "%.*s\n", (int)len, line);
    else
        print_human(mem, f, rec, level);
    fclose(mem);
    size_t at = f->ring_at++ % f->tail;
    free(f->ring[at]);
    f->ring[at] = text;
    if (f->nring < f->tail)
        f->nring++;
}

static void flush_tail(struct filter *f)
{
    size_t first = f->ring_at - f->nring;
    if (f->nring && f->runs && !f->json && !f->all_runs)
        zerg_logs_runs_tail_header(f->runs, stdout);
    for (size_t i = 0; i < f->nring; i++) {
        char **slot = &f->ring[(first + i) % f->tail];
        fputs(*slot, stdout);
        free(*slot);
        *slot = NULL;
    }
    f->nring = 0;
}

/* Parses one line and prints it if it matches; counts it if corrupt. */
static void handle_line(struct reader *r, const struct filter *f,
                        const char *line, size_t len)
{
    r->lineno++;
    if (len == 0)
        return;
    zerg_json *rec = zerg_json_parse(line, len, NULL);
    enum zerg_log_level level = ZERG_LOG_INFO;
    int ok = rec && zerg_json_is(rec, ZERG_JSON_OBJECT) &&
             zerg_json_as_str(zerg_json_get(rec, "ts")) &&
             zerg_json_as_str(zerg_json_get(rec, "msg")) &&
             zerg_log_level_parse(zerg_json_as_str(zerg_json_get(rec, "level")),
                                  &level) == 0;
    if (!ok) {
        if (!r->corrupt++)
            r->first_corrupt = r->lineno;
    } else if (matches(f, rec, level)) {
        if (f->each)
            f->each(f->each_ctx, rec);
        else if (f->tail && !f->follow_live)
            keep_for_tail((struct filter *)f, rec, level, line, len);
        else if (f->json)
            printf("%.*s\n", (int)len, line);
        else {
            if (f->runs)
                zerg_logs_runs_header(f->runs, stdout, rec);
            print_human(stdout, f, rec, level);
        }
    }
    zerg_json_free(rec);
}

/* ---- reading ----------------------------------------------------------- */

/* Splits complete lines off the buffer; at_eof also takes the rest. */
static void drain(struct reader *r, const struct filter *f, int at_eof)
{
    size_t start = 0;
    for (;;) {
        char *nl = memchr(r->buf + start, '\n', r->len - start);
        if (!nl)
            break;
        size_t n = (size_t)(nl - (r->buf + start));
        if (r->skipping)
            r->skipping = 0; /* the tail of an over-long line */
        else
            handle_line(r, f, r->buf + start, n);
        start += n + 1;
    }
    if (r->skipping) {
        r->len = 0; /* still inside the over-long line: drop it */
        return;
    }
    if (at_eof && start < r->len) {
        handle_line(r, f, r->buf + start, r->len - start);
        start = r->len;
    }
    memmove(r->buf, r->buf + start, r->len - start);
    r->len -= start;
    if (r->len > LINE_MAX_BYTES) {
        /* Count it once and drop bytes up to its newline. */
        r->lineno++;
        if (!r->corrupt++)
            r->first_corrupt = r->lineno;
        r->len = 0;
        r->skipping = 1;
    }
    fflush(stdout);
}

/* Reads what is available now.  0 at EOF, -errno on error. */
static int read_available(struct reader *r, const struct filter *f)
{
    for (;;) {
        if (r->cap - r->len < CHUNK) {
            size_t cap = r->cap ? r->cap * 2 : 2 * CHUNK;
            char *b = realloc(r->buf, cap);
            if (!b)
                return -ENOMEM;
            r->buf = b;
            r->cap = cap;
        }
        ssize_t n = read(r->fd, r->buf + r->len, r->cap - r->len);
        if (n < 0 && errno == EINTR) {
            if (interrupted)
                return 0;
            continue;
        }
        if (n < 0)
            return -errno;
        if (n == 0)
            return 0;
        r->len += (size_t)n;
        drain(r, f, 0);
    }
}

static void sleep_ms(int ms)
{
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* 1 if path is now a different or shorter file than the one open. */
static int replaced(const struct reader *r, const char *path)
{
    struct stat open_st, path_st;
    if (fstat(r->fd, &open_st) != 0 || stat(path, &path_st) != 0)
        return 0;
    off_t pos = lseek(r->fd, 0, SEEK_CUR);
    return open_st.st_ino != path_st.st_ino ||
           open_st.st_dev != path_st.st_dev || path_st.st_size < pos;
}

/* monitor.jsonl, never through a link and never blocking on a FIFO.  The
 * fd, or negative with err set. */
static int open_log(const char *path, struct zerg_err *err)
{
    return zerg_fsio_open_read(path, ZERG_FSIO_NOFOLLOW, err);
}

static int follow(struct reader *r, const struct filter *f, const char *path)
{
    while (!interrupted) {
        int rc = r->fd >= 0 ? read_available(r, f) : 0;
        if (rc)
            return rc;
        sleep_ms(POLL_MS);
        if (r->fd < 0 || replaced(r, path)) {
            int fd = open_log(path, NULL);
            if (fd < 0)
                continue;
            if (r->fd >= 0)
                close(r->fd);
            r->fd = fd;
            r->len = 0;
            r->skipping = 0;
        }
    }
    return 0;
}

/* ---- the command ------------------------------------------------------- */

static int parse_worker(const char *s, int *out)
{
    char *end;
    if (strcasecmp(s, "orch") == 0) {
        *out = ORCH_FILTER;
        return 0;
    }
    if (*s == 'W' || *s == 'w')
        s++;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 0 || v > 1000000)
        return -1;
    *out = (int)v;
    return 0;
}

/* An ISO-8601 time, or an age "90s" / "10m" / "2h" / "1d" before now. */
static int parse_since(const char *s, int64_t *out)
{
    if (zerg_clock_parse_iso8601(s, out) == 0)
        return 0;
    char *end;
    double v = strtod(s, &end);
    static const struct {
        char unit;
        double s;
    } units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
    if (end == s || v < 0 || end[0] == '\0' || end[1] != '\0')
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (*end == units[i].unit) {
            *out = zerg_clock_wall(&zerg_clock_system) -
                   (int64_t)(v * units[i].s * 1e9);
            return 0;
        }
    return -1;
}

/* A whole number above 0 into one of the two outputs. */
static int parse_count(const char *s, size_t *as_size, int *as_int)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 1 || v > 1000000)
        return -1;
    if (as_size)
        *as_size = (size_t)v;
    if (as_int)
        *as_int = (int)v;
    return 0;
}

static int parse(int argc, char **argv, struct filter *f)
{
    static const struct option opts[] = {
        {"worker", required_argument, NULL, 'w'},
        {"task", required_argument, NULL, 't'},
        {"event", required_argument, NULL, 'e'},
        {"level", required_argument, NULL, 'l'},
        {"follow", no_argument, NULL, 'f'},
        {"since", required_argument, NULL, 's'},
        {"tail", required_argument, NULL, 'n'},
        {"attempt", required_argument, NULL, 'a'},
        {"json", no_argument, NULL, 'j'},
        {"joblog", no_argument, NULL, 'J'},
        {"all-runs", no_argument, NULL, 'A'},
        {"raw", no_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
        switch (c) {
        case 'w':
            if (parse_worker(optarg, &f->worker))
                return zerg_cli_usage_error("logs",
                                            "--worker takes a worker "
                                            "number or 'orch', not '%s'",
                                            optarg);
            break;
        case 't':
            f->task = optarg;
            break;
        case 'e':
            f->events = optarg;
            break;
        case 'l':
            if (zerg_log_level_parse(optarg, &f->min_level))
                return zerg_cli_usage_error("logs",
                                            "--level takes DEBUG, "
                                            "INFO, WARN or ERROR, not '%s'",
                                            optarg);
            break;
        case 'f':
            f->follow = 1;
            break;
        case 's':
            if (parse_since(optarg, &f->since_ns))
                return zerg_cli_usage_error("logs",
                                            "--since takes a time "
                                            "(2026-02-03T05:41:55Z) or an "
                                            "age (90s, 10m, 2h, 1d), not "
                                            "'%s'",
                                            optarg);
            break;
        case 'n':
        case 'a':
            if (parse_count(optarg, c == 'n' ? &f->tail : NULL,
                            c == 'a' ? &f->attempt : NULL))
                return zerg_cli_usage_error("logs",
                                            "--%s takes a whole number "
                                            "above 0, not '%s'",
                                            c == 'n' ? "tail" : "attempt",
                                            optarg);
            break;
        case 'j':
            f->json = 1;
            break;
        case 'J':
            f->joblog = 1;
            break;
        case 'A':
            f->all_runs = 1;
            break;
        case 'R':
            f->raw = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            return ZERG_EXIT_OK;
        default:
            return zerg_cli_usage_error("logs", NULL);
        }
    }
    if (optind < argc)
        return zerg_cli_usage_error("logs", "unexpected argument '%s'",
                                    argv[optind]);
    if (f->raw && !f->task)
        return zerg_cli_usage_error("logs", "--raw needs --task");
    if (f->attempt && !f->task)
        return zerg_cli_usage_error("logs", "--attempt needs --task");
    if (f->joblog &&
        (f->worker != -1 || f->events || f->follow || f->tail || f->since_ns ||
         f->attempt || f->min_level != ZERG_LOG_DEBUG))
        return zerg_cli_usage_error("logs", "--joblog combines with --task "
                                            "and --json only");
    if (f->tail && !(f->ring = calloc(f->tail, sizeof *f->ring)))
        return zerg_cli_usage_error("logs", "out of memory");
    return -1;
}

/* --task: the attempt's own output after its events. */
static void print_task_output(struct zerg_cli *cli, const struct filter *f)
{
    char feature[ZERG_ID_MAX + 1], path[PATH_MAX];
    struct zerg_err err = {0};
    if (zerg_cli_feature(cli, feature, sizeof feature, &err) ||
        zerg_task_output_path(cli, feature, f->task, f->attempt, path,
                              sizeof path) < 0) {
        if (f->attempt)
            fprintf(stderr, "zerg logs: no output of %s attempt %d\n", f->task,
                    f->attempt);
        return;
    }
    printf("==> %s <==\n", path);
    if (zerg_task_output_print_as(stdout, path, f->tail, "", f->raw) < 0)
        fprintf(stderr, "zerg logs: cannot read %s\n", path);
}

static void report_corrupt(const struct reader *r, const char *path,
                           const struct filter *f)
{
    if (r->corrupt && !f->quiet)
        fprintf(stderr,
                "zerg: warning: skipped %zu corrupt line%s in %s "
                "(first: line %zu)\n",
                r->corrupt, r->corrupt == 1 ? "" : "s", path, r->first_corrupt);
}

/* A bound on NAME.1 .. NAME.N looked at (logging.keep is far below). */
#define ROTATED_MAX 1000

/* --since and --tail look into the rotated files too (NAME.1 is the
 * newest), oldest first, so that a time window or the last N lines span
 * a rotation.  A file last written before --since holds nothing after it
 * and is skipped unread; one that is not a plain file of zerg's (a link,
 * a FIFO) is skipped with a warning.  0, or -errno of a read. */
static int read_rotated(const struct filter *f, const char *path)
{
    char p[PATH_MAX + 16];
    struct stat st;
    int n = 0;
    while (n < ROTATED_MAX &&
           snprintf(p, sizeof p, "%s.%d", path, n + 1) < (int)sizeof p &&
           lstat(p, &st) == 0)
        n++;
    for (int i = n; i >= 1; i--) {
        snprintf(p, sizeof p, "%s.%d", path, i);
        int64_t from = f->since_ns;
        if (f->runs && !f->all_runs && zerg_logs_runs_first(f->runs) > from)
            from = zerg_logs_runs_first(f->runs);
        if (from && lstat(p, &st) == 0 &&
            (int64_t)st.st_mtim.tv_sec * ZERG_NS_PER_S + st.st_mtim.tv_nsec <
                from)
            continue;
        struct zerg_err e = {0};
        struct reader r = {.fd = open_log(p, &e)};
        if (r.fd < 0) {
            fprintf(stderr, "zerg: warning: skipped %s\n", e.msg);
            continue;
        }
        int rc = read_available(&r, f);
        drain(&r, f, 1);
        report_corrupt(&r, p, f);
        close(r.fd);
        free(r.buf);
        if (rc)
            return rc;
    }
    return 0;
}

/* The monitor log's path, or a usage error said. */
static int log_path(struct zerg_cli *cli, char *path, size_t size)
{
    if (zerg_cli_path(cli, path, size, ".zerg/monitor.jsonl")) {
        zerg_cli_error("logs", "the project path is too long");
        return ZERG_EXIT_USAGE;
    }
    return 0;
}

/* Every event of feature to fn, rotated files first; quiet: no warning
 * of corrupt lines (a pre-pass, the main pass warns). */
static int each_event(struct zerg_cli *cli, const char *feature,
                      zerg_logs_each_fn *fn, void *ctx, int quiet)
{
    struct filter f = {.feature = feature,
                       .worker = -1,
                       .min_level = ZERG_LOG_DEBUG,
                       .each = fn,
                       .each_ctx = ctx,
                       .quiet = quiet};
    char path[PATH_MAX];
    if (log_path(cli, path, sizeof path))
        return ZERG_EXIT_USAGE;
    struct zerg_err oerr = {0};
    struct reader r = {.fd = open_log(path, &oerr)};
    if (r.fd < 0) {
        if (quiet)
            return ZERG_EXIT_FAIL;
        zerg_cli_error("logs", "%s%s", r.fd == -ENOENT ? path : oerr.msg,
                       r.fd == -ENOENT ? ": no rush has run here yet" : "");
        return r.fd == -ENOENT ? ZERG_EXIT_FAIL : ZERG_EXIT_USAGE;
    }
    int rc = read_rotated(&f, path);
    if (!rc)
        rc = read_available(&r, &f);
    drain(&r, &f, 1);
    if (rc && !quiet)
        zerg_cli_error("logs", "cannot read %s: %s", path, strerror(-rc));
    report_corrupt(&r, path, &f);
    close(r.fd);
    free(r.buf);
    return rc ? ZERG_EXIT_FAIL : 0;
}

int zerg_logs_each(struct zerg_cli *cli, const char *feature,
                   zerg_logs_each_fn *fn, void *ctx)
{
    return each_event(cli, feature, fn, ctx, 0);
}

int zerg_cmd_logs(struct zerg_cli *cli, int argc, char **argv)
{
    struct filter f = {.feature = cli->feature_opt,
                       .worker = -1,
                       .min_level = ZERG_LOG_DEBUG,
                       .color = cli->color};
    int rc = parse(argc, argv, &f);
    if (rc >= 0)
        return rc;
    if (f.joblog)
        return zerg_logs_joblog(cli, f.task, f.json);
    char path[PATH_MAX];
    if (log_path(cli, path, sizeof path))
        return ZERG_EXIT_USAGE;
    struct zerg_err oerr = {0};
    struct reader r = {.fd = open_log(path, &oerr)};
    if (r.fd == ZERG_ENOTREG || r.fd == ZERG_ESYMLINK || r.fd == -EISDIR) {
        zerg_cli_error("logs", "%s", oerr.msg);
        return ZERG_EXIT_USAGE;
    }
    if (r.fd < 0 && (r.fd != -ENOENT || !f.follow)) {
        zerg_cli_error("logs", "%s: %s%s", path, zerg_strerror(r.fd),
                       r.fd == -ENOENT ? " (no rush has run here yet)" : "");
        return ZERG_EXIT_FAIL;
    }
    struct sigaction sa = {.sa_handler = on_sigint};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* Where each feature's current run begins, for the headers and the
     * default of the current run only; it may begin in a rotated file. */
    struct zerg_logs_runs runs = {0};
    if (r.fd >= 0)
        each_event(cli, f.feature, zerg_logs_runs_scan, &runs, 1);
    f.runs = &runs;
    int older = !f.all_runs && runs.n;
    rc = f.since_ns || f.tail || older ? read_rotated(&f, path) : 0;
    if (!rc && r.fd >= 0)
        rc = read_available(&r, &f);
    if (!f.follow)
        drain(&r, &f, 1);
    if (f.tail)
        flush_tail(&f);
    f.follow_live = 1;
    if (!rc && f.follow)
        rc = follow(&r, &f, path);
    else if (!rc && f.task && !f.json)
        print_task_output(cli, &f);
    if (rc)
        zerg_cli_error("logs", "cannot read %s: %s", path, strerror(-rc));
    report_corrupt(&r, path, &f);
    if (runs.hidden && !f.json)
        fprintf(stderr,
                "zerg logs: %zu event%s of earlier runs not shown "
                "(--all-runs shows every run)\n",
                runs.hidden, runs.hidden == 1 ? "" : "s");
    zerg_logs_runs_free(&runs);
    if (r.fd >= 0)
        close(r.fd);
    free(r.buf);
    free(f.ring);
    return rc ? ZERG_EXIT_FAIL : ZERG_EXIT_OK;
}
