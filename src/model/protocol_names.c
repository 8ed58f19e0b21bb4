/* protocol_names.c - the names of the files in a feature's run directory
 * (zerg/protocol.h): building a file's path from what it is about, and
 * reading back what a name found by inotify or a scan is (a heartbeat of
 * which slot, a result, the lease, a retry request or its answer). */
#include "zerg/protocol.h"

#include <string.h>

#include "zerg/fsio.h"

/* ---- paths ---------------------------------------------------------- */

int zerg_proto_run_dir(char *buf, size_t n, const char *state_dir,
                       const char *feature)
{
    return zerg_fsio_path(buf, n, "%s/%s", state_dir, feature);
}

/* Each slot's assignment lives in a directory of its own, so a worker's
 * inotify watch wakes it for its own assignments only, not for every
 * heartbeat and result of the others. */
int zerg_proto_slot_dir(char *buf, size_t n, const char *dir, int slot)
{
    return zerg_fsio_path(buf, n, "%s/slot-%d", dir, slot);
}

int zerg_proto_assign_path(char *buf, size_t n, const char *dir, int slot)
{
    return zerg_fsio_path(buf, n, "%s/slot-%d/assign.json", dir, slot);
}

int zerg_proto_heartbeat_path(char *buf, size_t n, const char *dir, int slot)
{
    return zerg_fsio_path(buf, n, "%s/heartbeat-%d.json", dir, slot);
}

int zerg_proto_result_path(char *buf, size_t n, const char *dir,
                           const char *task, int attempt)
{
    return zerg_fsio_path(buf, n, "%s/result-%s-%d.json", dir, task, attempt);
}

int zerg_proto_lease_path(char *buf, size_t n, const char *dir,
                          const char *feature)
{
    return zerg_fsio_path(buf, n, "%s/lease-%s.json", dir, feature);
}

/* ---- names ---------------------------------------------------------- */

/* If name is prefix + rest + ".json" with a non-empty rest, returns rest's
 * start and sets *len; else NULL. */
static const char *name_body(const char *name, const char *prefix, size_t *len)
{
    size_t pl = strlen(prefix), nl = strlen(name), sl = strlen(".json");
    if (nl <= pl + sl || strncmp(name, prefix, pl) != 0 ||
        strcmp(name + nl - sl, ".json") != 0)
        return NULL;
    *len = nl - pl - sl;
    return name + pl;
}

/* The slot number of body (digits only, no sign or leading zero), or -1. */
static int parse_slot(const char *body, size_t len)
{
    if (len == 0 || len > 9 || (body[0] == '0' && len > 1))
        return -1;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (body[i] < '0' || body[i] > '9')
            return -1;
        v = v * 10 + (body[i] - '0');
    }
    return v;
}

int zerg_proto_classify(const char *name, int *slot)
{
    static const struct {
        const char *prefix;
        int kind;
    } kinds[] = {
        {"heartbeat-", 'h'},
        {"result-", 'r'},
        {"lease-", 'l'},
        {"retry-", 'q'},
        /* the rush's answer to a retry request */
        {"retried-", 'a'},
    };
    /* Temp files of the atomic replace start with '.' (".x.tmp.123"). */
    if (!name || name[0] == '.' || strstr(name, ".tmp."))
        return 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        size_t len;
        const char *body = name_body(name, kinds[i].prefix, &len);
        if (!body)
            continue;
        if (kinds[i].kind != 'h')
            return kinds[i].kind;
        int s = parse_slot(body, len);
        if (s < 0)
            return 0;
        if (slot)
            *slot = s;
        return kinds[i].kind;
    }
    return 0;
}
