/* complete.c - complete.h: the candidates Tab offers in `zerg lua`, and the
 * closest global to an unknown one.
 *
 * Candidates come from walking the session's tables with raw access only
 * (lua_rawget, lua_next, lua_getmetatable): an __index is followed only
 * when it is a table, and no metamethod (__index function, __pairs, ...)
 * ever runs, so Tab cannot run user code, hang on a proxy or change the
 * session.  The walk happens in C because the sandbox hides metatables
 * from Lua (getmetatable gives "read-only" for the library views), and it
 * is bounded: COMPLETE_SCAN keys per completion, INDEX_DEPTH __index links
 * per table, PATH_PARTS names in `a.b.c`. */
#include "lua/complete.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "lua/vm.h"
#include "zerg/err.h"
#include "zerg/policy.h"
#include "zerg/repl.h"
#include "zerg/text.h"

#define INDEX_DEPTH 8 /* __index tables followed from one value */
#define PATH_PARTS 16 /* names in a.b.c */
#define PREFIX_MIN 3  /* "did you mean" by prefix needs 3 letters typed */

static const char *const keywords[] = {
    "and",      "break",  "do",   "else", "elseif", "end",   "false", "for",
    "function", "goto",   "if",   "in",   "local",  "nil",   "not",   "or",
    "repeat",   "return", "then", "true", "until",  "while", NULL,
};

struct walk {
    const char *line;   /* the text before the cursor */
    size_t ws;          /* where the word starts in line */
    size_t lead;        /* the word's bytes kept in front of a key */
    const char *prefix; /* the key typed so far */
    size_t plen;
    int methods; /* after ':': functions only */
    size_t scanned;
    char **cands;
    size_t n, cap;
};

static int word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == ':';
}

size_t zerg_complete_word_start(const char *line)
{
    size_t i = strlen(line);
    while (i > 0 && word_char(line[i - 1]))
        i--;
    return i;
}

static int is_ident(const char *s, size_t n)
{
    if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!word_char(s[i]) || s[i] == '.' || s[i] == ':')
            return 0;
    return 1;
}

/* Keeps key when it extends the prefix; raises on no memory. */
static void add(lua_State *L, struct walk *w, const char *key, size_t klen)
{
    if (klen < w->plen || memcmp(key, w->prefix, w->plen) != 0)
        return;
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        char **grown = realloc(w->cands, cap * sizeof *grown);
        if (!grown)
            luaL_error(L, "not enough memory");
        w->cands = grown;
        w->cap = cap;
    }
    char *c = malloc(w->lead + klen + 1);
    if (!c)
        luaL_error(L, "not enough memory");
    memcpy(c, w->line + w->ws, w->lead);
    memcpy(c + w->lead, key, klen);
    c[w->lead + klen] = '\0';
    w->cands[w->n++] = c;
}

/* Replaces the value on top by its metatable's __index when that is a
 * table; 0 (and pops it) otherwise. */
static int next_index(lua_State *L)
{
    if (!lua_getmetatable(L, -1)) { /* v mt */
        lua_pop(L, 1);
        return 0;
    }
    lua_pushliteral(L, "__index");
    lua_rawget(L, -2); /* v mt index */
    lua_remove(L, -2);
    lua_remove(L, -2); /* index */
    if (lua_istable(L, -1))
        return 1;
    lua_pop(L, 1);
    return 0;
}

/* Adds the identifier keys of the value on top (popped), then of the
 * __index tables behind it. */
static void scan(lua_State *L, struct walk *w)
{
    for (int depth = 0; depth <= INDEX_DEPTH; depth++) {
        if (lua_istable(L, -1)) {
            lua_pushnil(L); /* t key */
            while (w->scanned < ZERG_REPL_COMPLETE_SCAN && lua_next(L, -2)) {
                w->scanned++; /* t key value */
                size_t klen;
                if (lua_type(L, -2) == LUA_TSTRING &&
                    (!w->methods || lua_type(L, -1) == LUA_TFUNCTION)) {
                    const char *k = lua_tolstring(L, -2, &klen);
                    if (is_ident(k, klen))
                        add(L, w, k, klen);
                }
                lua_pop(L, 1); /* t key */
            }
            if (w->scanned >= ZERG_REPL_COMPLETE_SCAN) {
                lua_pop(L, 2); /* the key lua_next did not consume */
                return;
            }
        }
        if (!next_index(L))
            return;
    }
    lua_pop(L, 1);
}

/* Replaces the value on top by its field name (raw, through __index
 * tables); 0 (and pops it) when there is none. */
static int field(lua_State *L, const char *name, size_t n)
{
    for (int depth = 0; depth <= INDEX_DEPTH; depth++) {
        if (lua_istable(L, -1)) {
            lua_pushlstring(L, name, n);
            if (lua_rawget(L, -2) != LUA_TNIL) { /* v field */
                lua_remove(L, -2);
                return 1;
            }
            lua_pop(L, 1);
        }
        if (!next_index(L))
            return 0;
    }
    lua_pop(L, 1);
    return 0;
}

/* 1 when line[0..end) ends with a string literal, bare or in parentheses:
 * `("x")` before ':' completes the string methods. */
static int after_string(const char *line, size_t end)
{
    int paren = end > 0 && line[end - 1] == ')';
    size_t i = end - (size_t)paren;
    if (i == 0 || (line[i - 1] != '"' && line[i - 1] != '\''))
        return 0;
    char q = line[--i];
    while (i > 0 && line[i - 1] != q)
        i--;
    if (i-- == 0)
        return 0;
    while (paren && i > 0 && line[i - 1] == ' ')
        i--;
    return !paren || (i > 0 && line[i - 1] == '(');
}

/* Pushes the value the path word[0..len) names, starting at the
 * globals; 0 (nothing pushed) when a part is missing or not a name. */
static int push_path(lua_State *L, const char *word, size_t len)
{
    zerg_vm_push_env(L);
    const char *p = word, *end = word + len;
    for (int parts = 0; p < end; parts++) {
        size_t n = strcspn(p, ".:");
        if (p + n > end)
            n = (size_t)(end - p);
        if (parts == PATH_PARTS || !is_ident(p, n) ||
            (p + n < end && p[n] == ':')) {
            lua_pop(L, 1);
            return 0;
        }
        if (!field(L, p, n))
            return 0;
        p += n + 1;
    }
    return 1;
}

/* "policies.retry." also offers the hooks the core calls on retry, even
 * when the module shows them only through an __index function. */
static void add_hooks(lua_State *L, struct walk *w, const char *path,
                      size_t len)
{
    static const char head[] = "policies.";
    size_t hl = sizeof head - 1;
    if (w->methods || len <= hl || memcmp(path, head, hl) != 0)
        return;
    for (const char *const *h = zerg_policy_hooks; *h; h++) {
        const char *dot = strchr(*h, '.');
        if (dot && (size_t)(dot - *h) == len - hl &&
            memcmp(*h, path + hl, len - hl) == 0)
            add(L, w, dot + 1, strlen(dot + 1));
    }
}

static int complete_lua(lua_State *L)
{
    struct walk *w = lua_touserdata(L, 1);
    const char *word = w->line + w->ws;
    size_t wl = strlen(word), sep = wl;
    while (sep > 0 && word[sep - 1] != '.' && word[sep - 1] != ':')
        sep--;
    w->prefix = word + sep;
    w->plen = wl - sep;
    w->lead = sep;
    if (sep == 0) { /* a global */
        zerg_vm_push_env(L);
        scan(L, w);
        for (const char *const *k = keywords; *k; k++)
            add(L, w, *k, strlen(*k));
        return 0;
    }
    w->methods = word[sep - 1] == ':';
    if (sep == 1) { /* ("x"):  */
        if (!after_string(w->line, w->ws))
            return 0;
        lua_pushliteral(L, "");
        scan(L, w);
        return 0;
    }
    if (push_path(L, word, sep - 1))
        scan(L, w);
    add_hooks(L, w, word, sep - 1);
    return 0;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts and drops duplicates (an __index table repeats its keys). */
static void sort_unique(struct walk *w)
{
    if (w->n == 0)
        return;
    qsort(w->cands, w->n, sizeof *w->cands, by_text);
    size_t k = 1;
    for (size_t i = 1; i < w->n; i++) {
        if (strcmp(w->cands[i], w->cands[k - 1]) == 0)
            free(w->cands[i]);
        else
            w->cands[k++] = w->cands[i];
    }
    w->n = k;
}

static void walk_free(struct walk *w, size_t from)
{
    for (size_t i = from; i < w->n; i++)
        free(w->cands[i]);
    free(w->cands);
}

/* Runs the walk for line; w->cands sorted on success. */
static int walk_run(struct zerg_vm *vm, struct walk *w)
{
    struct zerg_err e = {0};
    w->ws = zerg_complete_word_start(w->line);
    if (zerg_vm_cpcall(vm, complete_lua, w, &e) != 0)
        return -ENOMEM; /* raw access raises only when memory runs out */
    sort_unique(w);
    return 0;
}

int zerg_complete(struct zerg_vm *vm, const char *line, char **out, size_t max)
{
    struct walk w = {.line = line};
    int rc = walk_run(vm, &w);
    size_t n = rc != 0 ? 0 : w.n < max ? w.n : max;
    for (size_t i = 0; i < n; i++)
        out[i] = w.cands[i];
    walk_free(&w, n);
    return rc != 0 ? rc : (int)n;
}

/* The better of two names for a typo: fewer edits, then the first in
 * sorted order (cands are sorted, so the first seen wins a tie). */
static size_t closeness(const char *name, const char *cand)
{
    size_t d = zerg_edit_distance(name, cand), n = strlen(name);
    if (d <= 2 && d < strlen(cand))
        return d;
    if (n >= PREFIX_MIN && strncmp(cand, name, n) == 0)
        return 3; /* a prefix: after any near miss */
    return SIZE_MAX;
}

int zerg_complete_suggest(struct zerg_vm *vm, const char *name, char *buf,
                          size_t size)
{
    struct walk w = {.line = ""};
    if (walk_run(vm, &w) != 0)
        return -1;
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t i = 0; i < w.n; i++) {
        size_t d = closeness(name, w.cands[i]);
        if (d < best_d && strcmp(w.cands[i], name) != 0) {
            best = w.cands[i];
            best_d = d;
        }
    }
    if (best)
        snprintf(buf, size, "%s", best);
    walk_free(&w, 0);
    return best ? 0 : -1;
}
