/* repl.c - include/zerg/repl.h: `zerg lua`, a Lua session over a
 * project's run data.
 *
 * The data is read and parsed in C (yajl through zerg/json.h), then
 * converted inside one protected call; the helpers and the printer are
 * bundled Lua (lua/repl.lua, lua/inspect.lua).  Input handling follows
 * lua.c: an expression is tried first as "return <line>", a chunk that
 * fails to compile only because it ends early ("<eof>") asks for more
 * lines, and SIGINT sets a flag the VM's hook turns into an error, so
 * Ctrl-C stops the running chunk and not the session.  Tab and the "did
 * you mean" of an unknown global walk the session raw (lua/complete.c). */
#include "zerg/repl.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <editline/readline.h>
#include <lauxlib.h>

#include "lua/complete.h"
#include "lua/vm.h"
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/text.h"

#define DOC_MAX_BYTES (256u << 20) /* state and graph files */
#define HISTORY_LINES 1000
#define EOF_MARK "<eof>"
#define UNKNOWN_MARK "unknown global '" /* src/lua/vm.c env_index */
#define COMPLETE_MAX 1024               /* candidates one Tab offers */

struct zerg_repl {
    struct zerg_vm *vm;
    FILE *out, *errf;
    char monitor[PATH_MAX]; /* .zerg/monitor.jsonl */
    char history[PATH_MAX]; /* "" when there is nowhere to keep it */
};

static volatile sig_atomic_t repl_sigint;

static void on_sigint(int sig)
{
    (void)sig;
    repl_sigint = 1;
}

/* ---- reading the project's data -------------------------------------- */

static zerg_json *read_doc(struct zerg_repl *r, const char *what,
                           const char *path)
{
    char *text = NULL;
    size_t len = 0;
    struct zerg_err e = {0};
    int rc = zerg_fsio_read_all(path, DOC_MAX_BYTES, &text, &len, &e);
    if (rc == -ENOENT)
        return NULL;
    if (rc != 0) {
        fprintf(r->errf, "zerg lua: %s is nil: %s\n", what, e.msg);
        return NULL;
    }
    zerg_json *doc = zerg_json_parse(text, len, &e);
    free(text);
    if (!doc)
        fprintf(r->errf, "zerg lua: %s is nil: %s: %s\n", what, path, e.msg);
    return doc;
}

/* heartbeat-{id}.json files of the feature's run directory, keyed by id. */
static zerg_json *read_heartbeats(struct zerg_repl *r, const char *dir)
{
    zerg_json *all = zerg_json_obj();
    DIR *d = opendir(dir);
    if (!d || !all)
        goto done;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "heartbeat-", 10) != 0 || n <= 15 ||
            strcmp(e->d_name + n - 5, ".json") != 0)
            continue;
        char id[256], path[PATH_MAX];
        snprintf(id, sizeof id, "%.*s", (int)(n - 15), e->d_name + 10);
        if (zerg_fsio_path(path, sizeof path, "%s/%s", dir, e->d_name))
            continue;
        zerg_json *hb = read_doc(r, "a heartbeat", path);
        if (hb)
            zerg_json_set(all, id, hb);
    }
done:
    if (d)
        closedir(d);
    return all;
}

/* Loads the project's overrides into the session so `policies` shows what
 * a run would use; a broken one is reported and the bundled one shown. */
static void load_overrides(struct zerg_repl *r, const char *project)
{
    for (const char *const *n = zerg_policy_names; *n; n++) {
        char path[PATH_MAX], *text = NULL;
        size_t len = 0;
        struct zerg_err e = {0};
        if (zerg_fsio_path(path, sizeof path, "%s/.zerg/policies/%s.lua",
                           project, *n) != 0)
            continue;
        int rc = zerg_fsio_read_input(path, 1u << 20, &text, &len, &e);
        if (rc == 0)
            rc = zerg_policy_load_override(r->vm, *n, path, text, len, &e);
        if (rc != 0 && rc != -ENOENT)
            fprintf(r->errf, "zerg lua: using the bundled %s policy: %s\n", *n,
                    e.msg);
        free(text);
    }
}

/* ---- the session's globals ------------------------------------------ */

/* A tree owned by a Lua userdata, so a Lua error while it is being
 * pushed cannot leak it: the collector frees it. */
struct box {
    zerg_json *v;
};

static int box_gc(lua_State *L)
{
    struct box *b = lua_touserdata(L, 1);
    zerg_json_free(b->v);
    b->v = NULL;
    return 0;
}

static struct box *push_box(lua_State *L)
{
    struct box *b = lua_newuserdatauv(L, sizeof *b, 0);
    b->v = NULL;
    if (luaL_newmetatable(L, "zerg.box")) {
        lua_pushcfunction(L, box_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return b;
}

/* history(id) backend: the task's events from monitor.jsonl, oldest
 * first.  Upvalue 1 is the file's path. */
static int repl_events(lua_State *L)
{
    const char *id = luaL_checkstring(L, 1);
    struct box *b = push_box(L); /* id box */
    b->v = zerg_json_arr();
    /* zerg's own log: a FIFO or a link there is read as no events. */
    int fd = zerg_fsio_open_read(lua_tostring(L, lua_upvalueindex(1)),
                                 ZERG_FSIO_NOFOLLOW, NULL);
    FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
    if (fd >= 0 && !f)
        close(fd);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while (f && b->v && (n = getline(&line, &cap, f)) > 0) {
        if (!strstr(line, id))
            continue; /* cheap test before parsing */
        zerg_json *ev = zerg_json_parse(line, (size_t)n, NULL);
        const char *task = zerg_json_as_str(zerg_json_get(ev, "task"));
        if (task && strcmp(task, id) == 0)
            zerg_json_push(b->v, ev);
        else
            zerg_json_free(ev);
    }
    free(line);
    if (f)
        fclose(f);
    zerg_lua_push_json(L, b->v); /* id box events */
    zerg_json_free(b->v);
    b->v = NULL;
    return 1;
}

struct setup_ctx {
    struct zerg_repl *r;
    const char *feature;
    zerg_json *state, *graph, *config, *heartbeats;
};

/* Sets env[name] = v (nil allowed: the name stays readable). */
static void set_doc(lua_State *L, int env, const char *name, const zerg_json *v)
{
    zerg_vm_declare(L, name);
    lua_pushstring(L, name);
    zerg_lua_push_json(L, v);
    lua_rawset(L, env);
}

static int repl_setup(lua_State *L)
{
    struct setup_ctx *c = lua_touserdata(L, 1);
    zerg_vm_push_env(L); /* ud env */
    int env = lua_gettop(L);
    set_doc(L, env, "state", c->state);
    set_doc(L, env, "graph", c->graph);
    set_doc(L, env, "config", c->config);
    zerg_vm_declare(L, "feature");
    lua_pushstring(L, c->feature); /* NULL pushes nil */
    lua_setfield(L, env, "feature");
    zerg_lua_push_json(L, c->heartbeats); /* ud env hbs */
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
    }
    zerg_lua_intkeys(L, -1); /* worker 0 -> [0] */
    lua_setfield(L, env, "heartbeats");
    lua_newtable(L); /* ud env policies */
    for (const char *const *n = zerg_policy_names; *n; n++) {
        zerg_policy_push_module(L, *n);
        lua_setfield(L, -2, *n);
    }
    lua_setfield(L, env, "policies");
    zerg_vm_require(L, "zerg.repl"); /* ud env repl */
    lua_getfield(L, -1, "install");  /* ud env repl fn */
    lua_pushvalue(L, env);
    lua_pushstring(L, c->r->monitor);
    lua_pushcclosure(L, repl_events, 1); /* ... fn env events */
    lua_call(L, 2, 0);
    return 0;
}

static void history_path(struct zerg_repl *r)
{
    const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char dir[PATH_MAX];
    r->history[0] = '\0';
    if (state && *state &&
        zerg_fsio_path(dir, sizeof dir, "%s/zerg", state) == 0 &&
        zerg_fsio_mkdirs(dir, 0700) == 0)
        zerg_fsio_path(r->history, sizeof r->history, "%s/lua_history", dir);
    else if (home && *home)
        zerg_fsio_path(r->history, sizeof r->history, "%s/.zerg_lua_history",
                       home);
}

struct zerg_repl *zerg_repl_new(const struct zerg_repl_opts *o,
                                struct zerg_err *err)
{
    struct zerg_repl *r = calloc(1, sizeof *r);
    if (!r) {
        zerg_err_set(err, -ENOMEM, "zerg lua: %s", strerror(ENOMEM));
        return NULL;
    }
    r->out = o->out ? o->out : stdout;
    r->errf = o->err ? o->err : stderr;
    struct zerg_vm_opts vo = {
        .mode = ZERG_VM_REPL, .out = r->out, .interrupt = &repl_sigint};
    r->vm = zerg_vm_new(&vo, err);
    if (!r->vm) {
        free(r);
        return NULL;
    }
    zerg_fsio_path(r->monitor, sizeof r->monitor, "%s/.zerg/monitor.jsonl",
                   o->project);
    history_path(r);
    load_overrides(r, o->project);

    struct setup_ctx c = {.r = r, .feature = o->feature};
    char path[PATH_MAX];
    if (o->feature) {
        if (!zerg_fsio_path(path, sizeof path, "%s/.zerg/state/%s.json",
                            o->project, o->feature))
            c.state = read_doc(r, "state", path);
        if (!zerg_fsio_path(path, sizeof path,
                            "%s/.gsd/specs/%s/task-graph.json", o->project,
                            o->feature))
            c.graph = read_doc(r, "graph", path);
    }
    c.config = zerg_config_to_json(o->cfg);
    if (o->feature && !zerg_fsio_path(path, sizeof path, "%s/.zerg/state/%s",
                                      o->project, o->feature))
        c.heartbeats = read_heartbeats(r, path);
    int rc = zerg_vm_cpcall(r->vm, repl_setup, &c, err);
    zerg_json_free(c.state);
    zerg_json_free(c.graph);
    zerg_json_free(c.config);
    zerg_json_free(c.heartbeats);
    if (rc != 0) {
        zerg_err_prefix(err, "zerg lua: cannot set up the session");
        zerg_repl_free(r);
        return NULL;
    }
    return r;
}

void zerg_repl_free(struct zerg_repl *r)
{
    if (!r)
        return;
    zerg_vm_free(r->vm);
    free(r);
}

/* ---- running chunks -------------------------------------------------- */

struct eval_ctx {
    struct zerg_repl *r;
    const char *chunkname;
    const char *code;
    size_t len;
    int expr_first;     /* try "return <code>" first */
    int whole;          /* the input is complete: "<eof>" is an error */
    int incomplete;     /* out: the chunk ends early; more input needed */
    const char *script; /* file mode: the path, arg[0] */
    int argc;           /* file mode: arguments, as `...` and arg[1..] */
    char **argv;
};

/* 1 when msg is a syntax error at the end of the input. */
static int is_incomplete(const char *msg)
{
    size_t n = strlen(msg), m = strlen(EOF_MARK);
    return n >= m && strcmp(msg + n - m, EOF_MARK) == 0;
}

static void load_chunk(lua_State *L, struct eval_ctx *c)
{
    if (c->expr_first) {
        luaL_Buffer b;
        luaL_buffinit(L, &b);
        luaL_addstring(&b, "return ");
        luaL_addlstring(&b, c->code, c->len);
        luaL_addchar(&b, ';');
        luaL_pushresult(&b); /* ud text */
        size_t len;
        const char *text = lua_tolstring(L, -1, &len);
        int rc = zerg_vm_try_load(L, c->chunkname, text, len);
        lua_remove(L, -2); /* ud fn|msg */
        if (rc == LUA_OK)
            return;
        lua_pop(L, 1);
    }
    if (zerg_vm_try_load(L, c->chunkname, c->code, c->len) != LUA_OK) {
        if (!c->whole && is_incomplete(lua_tostring(L, -1))) {
            c->incomplete = 1;
            lua_pushnil(L);
            return;
        }
        lua_error(L);
    }
}

/* Prints the results base..top, tab-separated, through inspect.show. */
static void print_results(lua_State *L, struct zerg_repl *r, int base)
{
    int top = lua_gettop(L);
    if (top < base)
        return;
    zerg_vm_require(L, "zerg.inspect");
    lua_getfield(L, -1, "show"); /* ... inspect show */
    for (int i = base; i <= top; i++) {
        lua_pushvalue(L, -1);
        lua_pushvalue(L, i);
        lua_call(L, 1, 1);
        size_t len;
        const char *s = lua_tolstring(L, -1, &len);
        if (i > base)
            fputc('\t', r->out);
        fwrite(s, 1, len, r->out);
        lua_pop(L, 1);
    }
    fputc('\n', r->out);
    fflush(r->out);
}

static int eval_chunk(lua_State *L)
{
    struct eval_ctx *c = lua_touserdata(L, 1);
    load_chunk(L, c); /* ud fn */
    if (c->incomplete)
        return 0;
    int base = lua_gettop(L);
    if (c->script) {
        zerg_vm_push_env(L);            /* ud fn env */
        lua_createtable(L, c->argc, 1); /* ud fn env arg */
        lua_pushstring(L, c->script);
        lua_rawseti(L, -2, 0);
        for (int i = 0; i < c->argc; i++) {
            lua_pushstring(L, c->argv[i]);
            lua_rawseti(L, -2, i + 1);
        }
        lua_setfield(L, -2, "arg");
        lua_pop(L, 1); /* ud fn */
    }
    for (int i = 0; i < c->argc; i++)
        lua_pushstring(L, c->argv[i]);
    lua_call(L, c->argc, LUA_MULTRET); /* ud results... */
    print_results(L, c->r, base);
    return 0;
}

/* "unknown global 'tsks'" gains "; did you mean 'tasks'?" right after the
 * name, before the traceback. */
static void add_hint(struct zerg_repl *r, char *msg, size_t size)
{
    char *at = strstr(msg, UNKNOWN_MARK), word[ZERG_EDIT_MAX], best[128];
    if (!at)
        return;
    const char *name = at + strlen(UNKNOWN_MARK), *q = strchr(name, '\'');
    if (!q || (size_t)(q - name) >= sizeof word)
        return;
    memcpy(word, name, (size_t)(q - name));
    word[q - name] = '\0';
    if (zerg_complete_suggest(r->vm, word, best, sizeof best) != 0)
        return;
    char rest[ZERG_ERR_MSG_MAX];
    snprintf(rest, sizeof rest, "%s", q + 1);
    size_t off = (size_t)(q + 1 - msg);
    zerg_text_append(msg, size, &off, "; did you mean '%s'?%s", best, rest);
}

/* Runs one chunk with Ctrl-C armed.  0, 1 when incomplete, -1 on error
 * (printed). */
static int eval(struct zerg_repl *r, struct eval_ctx *c)
{
    struct sigaction sa = {.sa_handler = on_sigint}, old;
    sigemptyset(&sa.sa_mask);
    repl_sigint = 0;
    sigaction(SIGINT, &sa, &old);
    struct zerg_err e = {0};
    c->r = r;
    int rc = zerg_vm_cpcall(r->vm, eval_chunk, c, &e);
    sigaction(SIGINT, &old, NULL);
    fflush(r->out);
    if (rc != 0) {
        add_hint(r, e.msg, sizeof e.msg);
        fprintf(r->errf, "%s\n", e.msg);
        fflush(r->errf);
        return -1;
    }
    return c->incomplete ? 1 : 0;
}

int zerg_repl_run_string(struct zerg_repl *r, const char *code)
{
    struct eval_ctx c = {.chunkname = "=(command line)",
                         .code = code,
                         .len = strlen(code),
                         .expr_first = 1,
                         .whole = 1};
    if (code[0] == '=') /* "=expr" is "return expr" */
        c.code++, c.len--;
    return eval(r, &c);
}

int zerg_repl_run_file(struct zerg_repl *r, const char *path, int argc,
                       char **argv)
{
    char *text = NULL;
    size_t len = 0;
    struct zerg_err e = {0};
    /* Named on the command line: a pipe such as <(cmd) is fine. */
    if (zerg_fsio_read_file(path, 64u << 20, ZERG_FSIO_ANY_KIND, &text, &len,
                            &e) != 0) {
        fprintf(r->errf, "zerg lua: %s\n", e.msg);
        return -1;
    }
    if (len >= 1 && text[0] == '#') {
        /* "#!/usr/bin/env ..." becomes a comment; lines keep their
         * numbers */
        char *grown = realloc(text, len + 2);
        if (!grown) {
            free(text);
            fprintf(r->errf, "zerg lua: %s\n", strerror(ENOMEM));
            return -1;
        }
        text = grown;
        memmove(text + 2, text + 1, len);
        text[0] = text[1] = '-';
        len++;
    }
    char name[PATH_MAX + 1];
    snprintf(name, sizeof name, "@%s", path);
    struct eval_ctx c = {.chunkname = name,
                         .code = text,
                         .len = len,
                         .whole = 1,
                         .script = path,
                         .argc = argc,
                         .argv = argv};
    int rc = eval(r, &c);
    free(text);
    return rc;
}

/* ---- Tab -------------------------------------------------------------- */

int zerg_repl_complete(struct zerg_repl *r, const char *line, char **out,
                       size_t max)
{
    return zerg_complete(r->vm, line, out, max);
}

/* libedit completes one line at a time for one session: the candidates
 * of the last Tab, handed out by next_candidate. */
static struct zerg_repl *tab_repl;
static char *tab_cands[COMPLETE_MAX];
static int tab_n, tab_next;
static char tab_head[256]; /* readline's word before ours (see attempt) */
static size_t tab_cut;     /* bytes of ours before readline's word */

/* Everything but the characters of a word (complete.h), so readline's
 * word is the one the candidates complete. */
static char word_breaks[] = " \t\n\"\\'`@$><=;|&{}()[]+-*/%^~#,!?";

static char *next_candidate(const char *text, int state)
{
    (void)text;
    if (state == 0)
        tab_next = 0;
    if (tab_next >= tab_n)
        return NULL;
    const char *c = tab_cands[tab_next++];
    size_t hl = strlen(tab_head), cl = strlen(c) - tab_cut;
    char *m = malloc(hl + cl + 1);
    if (m) {
        memcpy(m, tab_head, hl);
        memcpy(m + hl, c + tab_cut, cl + 1);
    }
    return m;
}

static char **attempt(const char *text, int start, int end)
{
    (void)text;
    rl_attempted_completion_over = 1; /* never file names */
    char *line = strndup(rl_line_buffer, (size_t)end);
    if (!line)
        return NULL;
    size_t ws = zerg_complete_word_start(line), s = (size_t)start;
    /* Should readline's word differ from ours, line[start..end) is still
     * what is replaced: add or cut the difference. */
    snprintf(tab_head, sizeof tab_head, "%.*s", ws > s ? (int)(ws - s) : 0,
             line + s);
    tab_cut = ws < s ? s - ws : 0;
    int n = zerg_repl_complete(tab_repl, line, tab_cands, COMPLETE_MAX);
    free(line);
    tab_n = n > 0 ? n : 0;
    char **m = tab_n ? rl_completion_matches(text, next_candidate) : NULL;
    for (int i = 0; i < tab_n; i++)
        free(tab_cands[i]);
    tab_n = 0;
    return m;
}

static void tab_setup(struct zerg_repl *r)
{
    tab_repl = r;
    rl_attempted_completion_function = attempt;
    rl_completer_word_break_characters = word_breaks;
    rl_basic_word_break_characters = word_breaks;
    rl_completion_append_character = '\0'; /* "t." goes on typing */
}

/* ---- the interactive loop -------------------------------------------- */

/* libedit's own reader retries a read cut by a signal once, so Ctrl-C at
 * the prompt would only show at the next key.  This one gives up as soon
 * as SIGINT was seen; the loop below then drops the line. */
static int repl_getc(FILE *f)
{
    unsigned char c;
    for (;;) {
        ssize_t n = read(fileno(f), &c, 1);
        if (n == 1)
            return c;
        if (n < 0 && errno == EINTR && !repl_sigint)
            continue;
        return EOF;
    }
}

/* Appends line to *chunk (joined by a newline); 0 or -1. */
static int chunk_add(char **chunk, const char *line)
{
    size_t old = *chunk ? strlen(*chunk) : 0, n = strlen(line);
    char *grown = realloc(*chunk, old + n + 2);
    if (!grown)
        return -1;
    if (old)
        grown[old++] = '\n';
    memcpy(grown + old, line, n + 1);
    *chunk = grown;
    return 0;
}

static int blank(const char *s)
{
    return s[strspn(s, " \t\r\n")] == '\0';
}

/* Feeds one more line to the pending chunk and runs it once it is whole.
 * Returns -1 on an error, 0 otherwise; *chunk is freed once it ran. */
static int feed(struct zerg_repl *r, char **chunk, const char *line, int *ran)
{
    *ran = 0;
    if (chunk_add(chunk, line) != 0) {
        fprintf(r->errf, "zerg lua: %s\n", strerror(ENOMEM));
        return -1;
    }
    if (blank(*chunk)) {
        free(*chunk);
        *chunk = NULL;
        return 0;
    }
    const char *code = *chunk;
    struct eval_ctx c = {.chunkname = "=stdin",
                         .code = code,
                         .len = strlen(code),
                         .expr_first = 1};
    if (code[0] == '=')
        c.code++, c.len--;
    int rc = eval(r, &c);
    if (rc == 1)
        return 0; /* wait for more lines */
    *ran = 1;
    return rc;
}

/* Input that is not a terminal: the same loop, without prompts. */
static int repl_lines(struct zerg_repl *r)
{
    char *line = NULL, *chunk = NULL;
    size_t cap = 0;
    ssize_t n;
    int failed = 0, ran;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        if (line[n - 1] == '\n')
            line[n - 1] = '\0';
        if (feed(r, &chunk, line, &ran) != 0)
            failed = 1;
        if (ran) {
            free(chunk);
            chunk = NULL;
        }
    }
    if (chunk) { /* input ended inside a chunk: show why */
        struct eval_ctx c = {.chunkname = "=stdin",
                             .code = chunk,
                             .len = strlen(chunk),
                             .whole = 1};
        failed |= eval(r, &c) != 0;
    }
    free(chunk);
    free(line);
    return failed ? -1 : 0;
}

int zerg_repl_interactive(struct zerg_repl *r)
{
    if (!isatty(STDIN_FILENO))
        return repl_lines(r);
    rl_readline_name = "zerg";
    tab_setup(r);
    using_history();
    stifle_history(HISTORY_LINES);
    if (r->history[0])
        read_history(r->history);
    fprintf(r->out,
            "zerg lua (%s) - help() lists what is in scope; "
            "Ctrl-D leaves\n",
            LUA_RELEASE);
    fflush(r->out);
    /* Ctrl-C at the prompt drops the pending input, as in a shell. */
    struct sigaction sa = {.sa_handler = on_sigint}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    rl_getc_function = repl_getc;
    char *chunk = NULL;
    for (;;) {
        repl_sigint = 0;
        char *line = readline(chunk ? ">> " : "> ");
        if (repl_sigint) {
            fputc('\n', r->out);
            free(line);
            free(chunk);
            chunk = NULL;
            continue;
        }
        if (!line)
            break;
        int ran;
        feed(r, &chunk, line, &ran);
        free(line);
        if (!ran)
            continue;
        add_history(chunk);
        if (r->history[0])
            write_history(r->history); /* kept even if the session dies */
        free(chunk);
        chunk = NULL;
    }
    sigaction(SIGINT, &old, NULL);
    free(chunk);
    fputc('\n', r->out);
    return 0;
}
