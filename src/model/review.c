/* review.c - the request files of `zerg approve` and `zerg redo` (see
 * zerg/review.h). */
#include "zerg/review.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/json.h"

/* A request is a few hundred bytes; a note at most ZERG_REVIEW_NOTE_MAX. */
#define REQUEST_MAX_BYTES (64u << 10)

static const char *const decision_names[] = {"approve", "redo"};

const char *zerg_review_decision_name(enum zerg_review_decision d)
{
    return (unsigned)d < 2 ? decision_names[d] : "?";
}

int zerg_review_dir(char *buf, size_t n, const char *project,
                    const char *feature)
{
    return zerg_fsio_path(buf, n, "%s/.zerg/review/%s", project, feature);
}

int zerg_review_request_name(const char *name, char *task)
{
    size_t n = name ? strlen(name) : 0, sl = strlen(".json");
    if (n <= sl || n - sl > ZERG_ID_MAX || name[0] == '.' ||
        strcmp(name + n - sl, ".json"))
        return 0;
    char id[ZERG_ID_MAX + 1];
    memcpy(id, name, n - sl);
    id[n - sl] = '\0';
    if (!zerg_id_valid(id))
        return 0;
    if (task)
        memcpy(task, id, n - sl + 1);
    return 1;
}

static zerg_json *request_doc(const struct zerg_review_request *rq)
{
    zerg_json *doc = zerg_json_obj();
    if (!doc || zerg_json_set_str(doc, "feature", rq->feature) ||
        zerg_json_set_str(doc, "task", rq->task) ||
        zerg_json_set_num(doc, "attempt", rq->attempt) ||
        zerg_json_set_str(doc, "decision",
                          zerg_review_decision_name(rq->decision)) ||
        (rq->note && zerg_json_set_str(doc, "note", rq->note))) {
        zerg_json_free(doc);
        return NULL;
    }
    return doc;
}

static int check_request(const struct zerg_review_request *rq,
                         struct zerg_err *err)
{
    if (!zerg_id_valid(rq->feature))
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "invalid feature name \"%.80s\"", rq->feature);
    if (!zerg_id_valid(rq->task))
        return zerg_err_set(err, ZERG_EINVAL_INPUT, "invalid task id \"%.80s\"",
                            rq->task);
    if (rq->note && strlen(rq->note) > ZERG_REVIEW_NOTE_MAX)
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "the note is %zu bytes; at most %d go in a "
                            "prompt",
                            strlen(rq->note), ZERG_REVIEW_NOTE_MAX);
    if (rq->attempt < 1)
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "task %s has no attempt to review", rq->task);
    return 0;
}

int zerg_review_request_write(const char *project,
                              const struct zerg_review_request *rq,
                              char *written, size_t size, struct zerg_err *err)
{
    char rel[2 * ZERG_ID_MAX + 32], path[PATH_MAX];
    char *text = NULL;
    size_t len = 0;
    int rc = check_request(rq, err);
    if (rc)
        return rc;
    snprintf(rel, sizeof rel, ".zerg/review/%s", rq->feature);
    if (zerg_fsio_mkdirs_under(project, rel, 0755, err) < 0)
        return err && err->code ? err->code : -EIO;
    if (zerg_fsio_path(path, sizeof path, "%s/%s/%s.json", project, rel,
                       rq->task))
        return zerg_err_set(err, -ENAMETOOLONG, "the project path is too long");
    zerg_json *doc = request_doc(rq);
    if (!doc || !(text = zerg_json_encode(doc, &len, err)))
        rc = zerg_err_set(err, -ENOMEM, "cannot write %s: out of memory", path);
    else
        rc = zerg_fsio_write_atomic(path, text, len, ZERG_FSIO_DURABLE, err);
    if (rc == 0 && written)
        snprintf(written, size, "%s", path);
    free(text);
    zerg_json_free(doc);
    return rc;
}

void zerg_review_request_close(struct zerg_review_request *rq)
{
    if (!rq)
        return;
    free(rq->note);
    memset(rq, 0, sizeof *rq);
}

static const char *from_json(struct zerg_review_request *rq,
                             const zerg_json *doc)
{
    if (!zerg_json_is(doc, ZERG_JSON_OBJECT))
        return "not a JSON object";
    const char *feature = zerg_json_as_str(zerg_json_get(doc, "feature"));
    const char *task = zerg_json_as_str(zerg_json_get(doc, "task"));
    const char *decision = zerg_json_as_str(zerg_json_get(doc, "decision"));
    const zerg_json *attempt = zerg_json_get(doc, "attempt");
    const zerg_json *note = zerg_json_get(doc, "note");
    if (!feature || !zerg_id_valid(feature))
        return "\"feature\" is missing or not a valid name";
    if (!task || !zerg_id_valid(task))
        return "\"task\" is missing or not a valid task id";
    if (!zerg_json_is(attempt, ZERG_JSON_NUMBER) || attempt->u.number < 1 ||
        attempt->u.number > 1e6 ||
        attempt->u.number != (double)(int)attempt->u.number)
        return "\"attempt\" is not a whole number from 1";
    if (!decision || (strcmp(decision, "approve") && strcmp(decision, "redo")))
        return "\"decision\" is neither \"approve\" nor \"redo\"";
    if (note && (!zerg_json_as_str(note) ||
                 strlen(zerg_json_as_str(note)) > ZERG_REVIEW_NOTE_MAX))
        return "\"note\" is not text of at most 1000 bytes";
    snprintf(rq->feature, sizeof rq->feature, "%s", feature);
    snprintf(rq->task, sizeof rq->task, "%s", task);
    rq->attempt = (int)attempt->u.number;
    rq->decision =
        strcmp(decision, "approve") ? ZERG_REVIEW_REDO : ZERG_REVIEW_APPROVE;
    if (note && !(rq->note = strdup(zerg_json_as_str(note))))
        return "out of memory";
    return NULL;
}

int zerg_review_request_read(const char *path, struct zerg_review_request *rq,
                             struct zerg_err *err)
{
    struct zerg_err why = {0};
    char *text = NULL;
    size_t len = 0;
    zerg_json *doc = NULL;
    const char *what = NULL;

    memset(rq, 0, sizeof *rq);
    int rc = zerg_fsio_read_file(path, REQUEST_MAX_BYTES, ZERG_FSIO_NOFOLLOW,
                                 &text, &len, &why);
    if (rc) {
        zerg_err_set(err, rc, "%s", why.msg);
        goto cleanup;
    }
    if (!(doc = zerg_json_parse(text, len, &why)))
        rc = zerg_err_set(err, ZERG_ECORRUPT, "%s: not a review request: %s",
                          path, why.msg);
    else if ((what = from_json(rq, doc))) {
        zerg_review_request_close(rq);
        rc = zerg_err_set(err, ZERG_ECORRUPT, "%s: not a review request: %s",
                          path, what);
    }
cleanup:
    zerg_json_free(doc);
    free(text);
    return rc;
}
