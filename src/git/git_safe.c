/* git_safe.c - the -c overrides that keep git from running anything a
 * worker planted (DESIGN §13).
 *
 * A worker can write .git/config (its worktree shares the common dir),
 * files it includes, .gitattributes and .git/info/attributes.  zerg reads
 * the effective configuration before every call and answers each key that
 * names a program with a command-line value, which git reads last and so
 * wins.  Each value below was checked against git 2.39:
 *
 *   core.fsmonitor=false        the hook (or the builtin daemon) is off;
 *                               a planted hook otherwise runs on status,
 *                               add, reset and checkout.
 *   core.hooksPath=<dir>        an empty dir zerg owns (or /dev/null, under
 *                               which no hook file can ever exist): no
 *                               pre-commit, post-checkout or
 *                               reference-transaction hook runs.
 *   filter.<d>.clean= .smudge= .process=  a value that comes from the
 *                               repository (local or worktree scope, the
 *                               files they include too) is pinned to the
 *                               last value of the user's global or system
 *                               config, or blanked when they have none: an
 *                               empty command is treated as no filter
 *                               (content stored and checked out
 *                               unfiltered), and a driver that only the
 *                               repository defines gets .required=false
 *                               so it is not an error either.  A driver
 *                               of the user's own (git-crypt, LFS) keeps
 *                               running: a secret never lands in plain
 *                               text on the integration branch.  A
 *                               repository .required is pinned to the
 *                               user's value when they set one, so a
 *                               planted `required=false` cannot let a
 *                               failing git-crypt store plain text.
 *   merge.<d>.driver=git merge-file ...  an empty driver makes git fail
 *                               ("cannot run"), which would turn every
 *                               merge of such a path into an error; git's
 *                               own 3-way file merge keeps the merge
 *                               working and reports conflicts as
 *                               conflicts.  "git" is found through the
 *                               exec path git puts first on PATH.
 *   diff.<d>.textconv= .command= and diff.external=  an empty value makes
 *                               git refuse ("cannot run"): nothing runs,
 *                               and zerg's diffs are plumbing that use
 *                               neither (--no-ext-diff --no-textconv).
 *   core.editor=: sequence.editor=:  ":" is never launched.
 *   core.pager=cat, pager.<cmd>=false  "cat" means no pager.
 *   credential.helper=          an empty value resets the helper list.
 *   core.sshCommand= core.askPass= core.alternateRefsCommand=
 *   uploadpack.packObjectsHook= interactive.diffFilter=  empty: nothing to
 *                               run (zerg makes no network calls either).
 *   protocol.allow=never, protocol.<p>.allow=never  no transport at all,
 *                               which also covers core.gitProxy (the first
 *                               configured value wins there, so it cannot
 *                               be overridden) and remote helpers.
 *   gpg.*program=<git's default>, commit/tag.gpgSign=false,
 *   log.showSignature=false     nothing is signed or verified.
 *   submodule.recurse=false     no git runs inside a submodule whose own
 *                               config zerg has not read.
 *   gc.auto=0, maintenance.auto=false  no background gc in the user's repo.
 *
 * include.path and includeIf.*.path cannot be undone with -c, but
 * `git config --list --show-scope` lists the keys they bring with the
 * scope of the file holding the include (an include in .git/config is
 * "local"; verified with 2.39), so those keys are answered like any
 * other.  Only "system" and "global" are the user's: every other scope
 * (local, worktree, command, unknown) is the repository's.  core.worktree
 * cannot be overridden with -c either (git reads it from the repository's file
 * while finding the repository); zerg_git_run passes --work-tree instead. */
#include "zerg/git.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Always present, whatever the configuration holds. */
static const char *const FIXED[][2] = {
    {"core.fsmonitor", "false"},
    {"core.sshCommand", ""},
    {"core.editor", ":"},
    {"sequence.editor", ":"},
    {"core.pager", "cat"},
    {"core.askPass", ""},
    {"core.alternateRefsCommand", ""},
    {"diff.external", ""},
    {"credential.helper", ""},
    {"interactive.diffFilter", ""},
    {"uploadpack.packObjectsHook", ""},
    {"protocol.allow", "never"},
    {"protocol.ext.allow", "never"},
    {"gpg.program", "gpg"},
    {"gpg.openpgp.program", "gpg"},
    {"gpg.x509.program", "gpgsm"},
    {"gpg.ssh.program", "ssh-keygen"},
    {"gpg.ssh.defaultKeyCommand", ""},
    {"commit.gpgSign", "false"},
    {"tag.gpgSign", "false"},
    {"log.showSignature", "false"},
    {"submodule.recurse", "false"},
    {"gc.auto", "0"},
    {"maintenance.auto", "false"},
};
#define NFIXED (sizeof FIXED / sizeof FIXED[0])

#define MERGE_DRIVER "git merge-file --marker-size=%L %A %O %B"

struct ov {
    const char **args;
    size_t max, n;
    char *strs;
    size_t size, used;
};

/* Adds "-c" "key=value" unless that exact override is there already. */
static int add(struct ov *o, const char *key, size_t keylen, const char *value)
{
    char *s = o->strs + o->used;
    size_t room = o->size - o->used;
    int len = snprintf(s, room, "%.*s=%s", (int)keylen, key, value);
    if (len < 0 || (size_t)len >= room || o->n + 2 > o->max)
        return -ENOSPC;
    for (size_t i = 1; i < o->n; i += 2)
        if (!strcmp(o->args[i], s))
            return 0;
    o->args[o->n++] = "-c";
    o->args[o->n++] = s;
    o->used += (size_t)len + 1;
    return 0;
}

/* "section.sub.name" split at its first and last dot (the subsection may
 * hold dots).  sub is NULL for a two-level key. */
struct key {
    const char *sec, *sub, *name;
    size_t sec_len, sub_len, name_len;
};

static void split_key(const char *k, size_t len, struct key *out)
{
    const char *first = memchr(k, '.', len), *last = first;
    for (const char *p = first; p && p < k + len; p++)
        if (*p == '.')
            last = p;
    memset(out, 0, sizeof *out);
    out->sec = k;
    out->sec_len = first ? (size_t)(first - k) : len;
    out->name = last ? last + 1 : k + len;
    out->name_len = (size_t)(k + len - out->name);
    if (first && last > first) {
        out->sub = first + 1;
        out->sub_len = (size_t)(last - first - 1);
    }
}

static int sec_is(const struct key *k, const char *s)
{
    return k->sec_len == strlen(s) && !strncmp(k->sec, s, k->sec_len);
}

/* The listing is not NUL-terminated after a key: compare by length. */
static int name_is(const struct key *k, const char *s)
{
    return k->name_len == strlen(s) && !strncmp(k->name, s, k->name_len);
}

/* Adds "<sec>.<sub>.<name>=value" for k's subsection. */
static int add_sub(struct ov *o, const struct key *k, const char *name,
                   const char *value)
{
    char key[1024];
    int len = snprintf(key, sizeof key, "%.*s.%.*s.%s", (int)k->sec_len, k->sec,
                       (int)k->sub_len, k->sub, name);
    if (len < 0 || (size_t)len >= sizeof key)
        return -ENOSPC;
    return add(o, key, (size_t)len, value);
}

/* One record of the listing: the scope (scoped listings only), the key
 * (not NUL-terminated: "key\nvalue") and the value (NULL for a bare
 * boolean). */
struct rec {
    int trusted; /* system or global: the user's own */
    const char *key, *value;
    size_t key_len;
};

/* The listing being answered, for lookups across records. */
struct listing {
    const char *p, *end;
    int scoped;
};

static int scope_trusted(const char *s)
{
    return !strcmp(s, "system") || !strcmp(s, "global");
}

/* The next record at *p, or 0 at the end. */
static int next_rec(const struct listing *l, const char **p, struct rec *r)
{
    memset(r, 0, sizeof *r);
    if (l->scoped && *p < l->end) {
        const char *scope_end = memchr(*p, '\0', (size_t)(l->end - *p));
        if (!scope_end)
            return 0;
        r->trusted = scope_trusted(*p);
        *p = scope_end + 1;
    }
    if (*p >= l->end)
        return 0;
    const char *rec_end = memchr(*p, '\0', (size_t)(l->end - *p));
    rec_end = rec_end ? rec_end : l->end;
    const char *nl = memchr(*p, '\n', (size_t)(rec_end - *p));
    r->key = *p;
    r->key_len = (size_t)((nl ? nl : rec_end) - *p);
    r->value = nl && rec_end < l->end ? nl + 1 : NULL;
    *p = rec_end + 1;
    return 1;
}

/* The last value "filter.<sub>.<name>" has in the user's own config
 * (trusted) or in the repository's (!trusted), NULL when none; sets
 * *any_program when that side defines any program of the driver. */
static const char *scope_value(const struct listing *l, const struct key *k,
                               const char *name, int trusted, int *any_program)
{
    const char *p = l->p, *found = NULL;
    struct rec r;
    while (next_rec(l, &p, &r)) {
        struct key rk;
        if (r.trusted != trusted || !r.key_len)
            continue;
        split_key(r.key, r.key_len, &rk);
        if (!rk.sub || !sec_is(&rk, "filter") || rk.sub_len != k->sub_len ||
            strncmp(rk.sub, k->sub, k->sub_len))
            continue;
        if (any_program && (name_is(&rk, "clean") || name_is(&rk, "smudge") ||
                            name_is(&rk, "process")))
            *any_program = 1;
        if (name && name_is(&rk, name))
            found = r.value ? r.value : "";
    }
    return found;
}

/* A filter key the repository set: clean and smudge are pinned to the
 * user's value or blanked (an empty one is no filter).  process is
 * different: any value, "" included, makes git ignore clean and smudge,
 * so it is pinned to the user's, blanked only when the repository set it
 * (a driver of the user's then fails as `required` rather than run the
 * planted program or store plain text), else left unset.  required is
 * pinned to the user's value, and a driver the user does not define is
 * made not required (its programs are all blank).  A key of the user's
 * own is left alone. */
static int filter_key(struct ov *o, const struct listing *l,
                      const struct rec *r, const struct key *k)
{
    static const char *const programs[] = {"clean", "smudge", "process"};
    if (r->trusted)
        return 0;
    int user_driver = 0, rc = 0;
    for (size_t i = 0; !rc && i < 3; i++) {
        const char *mine = scope_value(l, k, programs[i], 1, &user_driver);
        if (i < 2 || mine || scope_value(l, k, programs[i], 0, NULL))
            rc = add_sub(o, k, programs[i], mine ? mine : "");
    }
    const char *required = scope_value(l, k, "required", 1, NULL);
    if (!rc && required)
        rc = add_sub(o, k, "required", required);
    else if (!rc && !user_driver)
        rc = add_sub(o, k, "required", "false");
    return rc;
}

/* Keys FIXED answers already (gpg.ssh.program, protocol.ext.allow). */
static int is_fixed(const char *k, size_t len)
{
    for (size_t i = 0; i < NFIXED; i++)
        if (strlen(FIXED[i][0]) == len && !strncasecmp(FIXED[i][0], k, len))
            return 1;
    return 0;
}

/* The overrides one configuration key calls for (often none). */
static int one_key(struct ov *o, const struct listing *l, const struct rec *r)
{
    const char *k = r->key;
    size_t len = r->key_len;
    struct key key;
    split_key(k, len, &key);
    if (!key.sub) {
        if (sec_is(&key, "pager"))
            return add(o, k, len, "false");
        return 0;
    }
    if (is_fixed(k, len))
        return 0;
    if (!sec_is(&key, "filter") && !sec_is(&key, "merge") &&
        !sec_is(&key, "diff") && !sec_is(&key, "credential") &&
        !sec_is(&key, "gpg") && !sec_is(&key, "protocol"))
        return 0;
    /* "-c a=b" splits at the first '=': such a subsection cannot be
     * answered, so the call is refused rather than left open. */
    if (memchr(key.sub, '=', key.sub_len))
        return -EINVAL;
    if (sec_is(&key, "filter"))
        return filter_key(o, l, r, &key);
    if (sec_is(&key, "merge"))
        return add_sub(o, &key, "driver", MERGE_DRIVER);
    if (sec_is(&key, "diff") &&
        (name_is(&key, "command") || name_is(&key, "textconv")))
        return add(o, k, len, "");
    if (sec_is(&key, "credential") && name_is(&key, "helper"))
        return add(o, k, len, "");
    if (sec_is(&key, "gpg") && name_is(&key, "program"))
        return add(o, k, len, "");
    if (sec_is(&key, "protocol") && name_is(&key, "allow"))
        return add(o, k, len, "never");
    return 0;
}

static int add_fixed(struct ov *o, const char *hooks_dir)
{
    for (size_t i = 0; i < NFIXED; i++) {
        int rc = add(o, FIXED[i][0], strlen(FIXED[i][0]), FIXED[i][1]);
        if (rc)
            return rc;
    }
    return add(o, "core.hooksPath", strlen("core.hooksPath"),
               hooks_dir && *hooks_dir ? hooks_dir : "/dev/null");
}

static int overrides(const struct listing *l, const char *hooks_dir,
                     const char **args, size_t max_args, char *strs,
                     size_t strs_size)
{
    struct ov o = {args, max_args, 0, strs, strs_size, 0};
    int rc = add_fixed(&o, hooks_dir);
    const char *p = l->p;
    struct rec r;
    while (!rc && l->p && next_rec(l, &p, &r))
        if (r.key_len)
            rc = one_key(&o, l, &r);
    return rc ? rc : (int)o.n;
}

int zerg_git_safe_overrides(const char *list, size_t list_len,
                            const char *hooks_dir, const char **args,
                            size_t max_args, char *strs, size_t strs_size)
{
    struct listing l = {list, list ? list + list_len : NULL, 0};
    return overrides(&l, hooks_dir, args, max_args, strs, strs_size);
}

int zerg_git_safe_overrides_scoped(const char *list, size_t list_len,
                                   const char *hooks_dir, const char **args,
                                   size_t max_args, char *strs,
                                   size_t strs_size)
{
    struct listing l = {list, list ? list + list_len : NULL, 1};
    return overrides(&l, hooks_dir, args, max_args, strs, strs_size);
}
