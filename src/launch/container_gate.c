/* container_gate.c - quality gates in container mode (DESIGN §19).
 *
 * A gate runs what the workers wrote (`make test` runs a Makefile a task
 * may have written), so in container mode it runs where they ran: in a
 * container of the same runtime and image, with the same user, limits and
 * container.run_args, and nothing of the host but the gate's worktree:
 *
 *   RUNTIME run --rm --init --name zerg-F-{run hash}-gate-L{level}-{n}
 *     --label zerg.feature=F --label zerg.run=R --label zerg.gate=NAME
 *     --label zerg.project=P --user UID:GID [--userns=keep-id]
 *     -v TOP:/workspace [-v GITDIR:GITDIR:ro] -w /workspace[/SUB]
 *     -e ZERG_FEATURE=F -e ZERG_GATE=NAME -e ZERG_LEVEL=L
 *     [limits] [container.run_args...] IMAGE /bin/sh -c COMMAND
 *
 * The git dir is read-only: a gate may read history (git diff, git log)
 * but cannot write the repository.  The client is our child, so its exit
 * is the gate's; a gate that times out has its client killed and its
 * container removed by name (gate_stop), and one left by a killed
 * orchestrator carries the labels the next rush's cleanup removes. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "container_internal.h"
#include "zerg/err.h"

/* Each gate run gets a name of its own: the same gate runs again on
 * --resume, and a removal still under way must not block the next. */
static unsigned gate_seq;

static int gate_paths_ok(const struct zerg_gate_req *r, struct zerg_err *err)
{
    size_t tn = strlen(r->top);
    if (r->top[0] != '/' || strncmp(r->dir, r->top, tn) ||
        (r->dir[tn] && r->dir[tn] != '/'))
        return zerg_err_set(err, -EINVAL, "gate directory %s is not in %s",
                            r->dir, r->top);
    if (strchr(r->top, ':') || (r->git_dir && strchr(r->git_dir, ':')))
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "the gate worktree %s or the git dir holds ':', "
                            "which a container bind mount (-v) cannot "
                            "express; move the project",
                            r->top);
    return 0;
}

static void push_gate_identity(struct argv_buf *b, const struct container *c,
                               const struct zerg_gate_req *r, const char *name)
{
    ct_push_pair(b, "--name", name);
    ct_pushf(b, "--label=zerg.feature=%s", r->feature);
    ct_pushf(b, "--label=zerg.run=%s", r->run_id);
    ct_pushf(b, "--label=zerg.gate=%s", r->name);
    ct_pushf(b, "--label=zerg.project=%s", r->project);
    ct_push_user(b, &c->rt, getuid(), getgid());
}

static void push_gate_mounts(struct argv_buf *b, const struct zerg_gate_req *r)
{
    ct_pushf(b, "--volume=%s:/workspace", r->top);
    if (r->git_dir && r->git_dir[0] == '/')
        ct_pushf(b, "--volume=%s:%s:ro", r->git_dir, r->git_dir);
    ct_pushf(b, "--workdir=/workspace%s", r->dir + strlen(r->top));
    ct_pushf(b, "--env=ZERG_FEATURE=%s", r->feature);
    ct_pushf(b, "--env=ZERG_GATE=%s", r->name);
    ct_pushf(b, "--env=ZERG_LEVEL=%d", r->level);
}

int ct_gate_argv(struct zerg_launcher *l, const struct zerg_gate_req *req,
                 struct zerg_argv *out, char *handle, size_t handle_n,
                 struct zerg_err *err)
{
    struct container *c = ct(l);
    struct argv_buf b = {{NULL, 0}, 0, 0};
    char name[160];
    out->v = NULL, out->n = 0;
    int rc = gate_paths_ok(req, err);
    if (rc < 0)
        return rc;
    snprintf(name, sizeof name, "zerg-%.64s-%08" PRIx32 "-gate-L%d-%u",
             req->feature, ct_run_hash(req->run_id), req->level, ++gate_seq);
    ct_push(&b, c->rt.path);
    ct_push(&b, "run");
    ct_push(&b, "--rm");
    ct_push(&b, "--init");
    push_gate_identity(&b, c, req, name);
    push_gate_mounts(&b, req);
    ct_push_limits(&b, l->cfg);
    ct_push(&b, ct_image_of(l->cfg));
    ct_push(&b, "/bin/sh");
    ct_push_pair(&b, "-c", req->command);
    if (b.oom) {
        zerg_container_argv_free(&b.a);
        return zerg_err_set(err, -ENOMEM, "out of memory");
    }
    snprintf(handle, handle_n, "%s", name);
    *out = b.a;
    return 0;
}

void ct_gate_stop(struct zerg_launcher *l, const char *handle)
{
    const char *args[] = {"rm", "--force", handle, NULL};
    if (handle && handle[0])
        ct_rt_call(ct(l), args, RM_TIMEOUT_NS, NULL, 0);
}
