/* graph.h - the task graph: .gsd/specs/{feature}/task-graph.json.
 *
 * Loads the upstream ZERG format (unknown keys ignored) and enforces
 * DESIGN.md section 4: safe ids, levels >= 1 (or taken from a `*-L{n}-*`
 * id), known dependencies at the same or a lower level, no cycles.  Two
 * tasks of one level that create/modify the same path are legal but never
 * run together.  Each (level, path) written by two or more tasks is a
 * write group; a task lists the groups it is in, and two tasks conflict
 * when they share one.  Memory is linear in the writes: 20,000 tasks all
 * writing README.md are one group of 20,000, not 400 million pairs. */
#ifndef ZERG_GRAPH_H
#define ZERG_GRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct zerg_err;

#define ZERG_ID_MAX 64
#define ZERG_GRAPH_MAX_BYTES (64u << 20) /* refuse larger graph files */

struct zerg_strlist {
    char **v;
    size_t n;
};

struct zerg_task {
    char *id;
    char *title;              /* "" when absent (shared: never written) */
    int level;                /* >= 1 */
    uint32_t src_len;         /* its text in the file: see src_off */
    struct zerg_strlist deps; /* dependency ids as written */
    size_t *dep_idx;          /* same, as indexes into graph->tasks */
    struct zerg_strlist files_create, files_modify, files_read;
    char *command;                  /* zerg extension; NULL when absent */
    char *verify_command;           /* NULL when absent */
    int64_t verify_timeout_ns;      /* default 30 s */
    char *description;              /* "" when absent */
    char *context;                  /* "" when absent */
    struct zerg_strlist acceptance; /* acceptance_criteria, for the prompt */
    double estimate_minutes;        /* 0 when absent */
    size_t *wgroups;                /* the write groups it is in, ascending */
    size_t nwgroups;                /* 0: it shares no written path */
    /* Where its object lies in the file (bytes from the start; src_len
     * of them) and the zerg_graph_text_hash of that text: a worker reads
     * just this (zerg_graph_read_task).  0, 0, 0 for a graph not read
     * from text. */
    uint32_t src_off, src_hash;
};

struct zerg_level {
    size_t *tasks; /* indexes into graph->tasks, in a dependency order */
    size_t n;
};

struct zerg_graph {
    char *feature;           /* the `feature` field ("" when absent) */
    struct zerg_task *tasks; /* in file order */
    size_t ntasks;
    int nlevels;                  /* highest level */
    struct zerg_level *levels;    /* levels[1..nlevels]; [0] unused */
    struct zerg_strlist warnings; /* e.g. same-file conflicts */
    size_t nwgroups;              /* write groups (see above) */
    size_t *wgroup_start;  /* group k: wgroup_tasks[start[k]..start[k+1]) */
    size_t *wgroup_tasks;  /* ascending within a group */
    size_t *critical_path; /* longest chain by estimate (or count) */
    size_t ncritical;
    double critical_minutes;
    void *index; /* private id -> index hash */
};

/* Loads and validates a graph file.  On error returns ZERG_EINVAL_INPUT (or
 * -errno) with err naming the file, the task and what is wrong. */
int zerg_graph_load(struct zerg_graph **out, const char *path,
                    struct zerg_err *err);
int zerg_graph_parse(struct zerg_graph **out, const char *name,
                     const char *text, size_t len, struct zerg_err *err);
void zerg_graph_free(struct zerg_graph *g); /* accepts NULL */

/* One task of a graph file the orchestrator loaded (and so validated):
 * the src_len bytes at src_off of the open file fd, which must still
 * hash to src_hash and be the object of task `id`.  *out is a graph of
 * that one task, checked as zerg_graph_load checks each task (its level
 * as written; dependencies, levels and conflicts, which are about the
 * whole graph, are not filled in).  A worker needs one task per
 * assignment, so its memory does not grow with the graph.  Returns 0;
 * -ESTALE when those bytes are not that task any more (the file
 * changed since: read it whole instead); or negative with err set. */
int zerg_graph_read_task(struct zerg_graph **out, int fd, const char *name,
                         const char *id, uint32_t off, uint32_t len,
                         uint32_t hash, struct zerg_err *err);

/* FNV-1a (32 bits) of a task's text, as src_hash. */
uint32_t zerg_graph_text_hash(const char *s, size_t n);

/* Index of the task with that id, or -1. */
ssize_t zerg_graph_find(const struct zerg_graph *g, const char *id);

/* 1 if s is a safe id/feature name: [A-Za-z0-9._-]{1,64}, not starting
 * with '.' or '-'. */
int zerg_id_valid(const char *s);

/* n from an id of the form `*-L{n}-*` (n >= 1), else 0. */
int zerg_level_from_id(const char *id);

/* 1 if tasks a and b may not run at the same time (same-file conflict). */
int zerg_graph_conflicts(const struct zerg_graph *g, size_t a, size_t b);

/* The tasks task t may not run beside, ascending and each once: writes the
 * first max of them to out (out may be NULL with max 0) and returns how
 * many there are in all. */
size_t zerg_graph_partners(const struct zerg_graph *g, size_t t, size_t *out,
                           size_t max);

#endif
