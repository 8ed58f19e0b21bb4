/* sandbox_match.c - string.find, string.match, string.gmatch and
 * string.gsub for the sandbox (sandbox.h).
 *
 * Lua patterns are matched by backtracking, and a pattern such as
 * string.rep("a?", 30) .. string.rep("a", 30) takes 2^30 steps on a
 * 31-byte subject: with the stock functions that is minutes inside one C
 * call, where the count hook never runs.  This matcher has the Lua 5.4
 * pattern semantics (classes, sets, the four quantifiers, captures and
 * position captures, %b, %f, back-references, anchors) and charges one
 * instruction per step: every item tried, every character a quantifier
 * or %b scans, every start position.  A match therefore costs at most
 * the call's instruction budget, and the clock and Ctrl-C are looked at
 * every 1000 steps however long the subject.  Recursion is capped at 200
 * levels ("pattern too complex"), as in stock Lua. */
#include <ctype.h>
#include <string.h>

#include <lauxlib.h>

#include "lua/sandbox.h"

#define MAX_CAPS 32
#define MAX_DEPTH 200
#define CAP_OPEN (-1)   /* "(" seen, ")" not yet */
#define CAP_POS (-2)    /* "()": the position */
#define FLUSH_EVERY 256 /* steps between two zerg_vm_charge calls */

struct mstate {
    lua_State *L;
    const char *s0, *se; /* the subject */
    const char *pe;      /* end of the pattern */
    int depth, ncap;
    int64_t steps; /* not yet charged */
    struct {
        const char *at;
        ptrdiff_t len; /* or CAP_OPEN, CAP_POS */
    } cap[MAX_CAPS];
};

static void step(struct mstate *ms, int64_t n)
{
    ms->steps += n;
    if (ms->steps >= FLUSH_EVERY) {
        zerg_vm_charge(ms->L, ms->steps);
        ms->steps = 0;
    }
}

static void flush(struct mstate *ms)
{
    if (ms->steps)
        zerg_vm_charge(ms->L, ms->steps);
    ms->steps = 0;
}

static void ms_init(struct mstate *ms, lua_State *L, const char *s, size_t ls,
                    const char *p, size_t lp)
{
    ms->L = L;
    ms->s0 = s, ms->se = s + ls;
    ms->pe = p + lp;
    ms->depth = ms->ncap = 0;
    ms->steps = 0;
}

/* ---- single characters ---------------------------------------------- */

/* Whether c is in the class %cl (an upper-case letter complements). */
static int in_class(int c, int cl)
{
    int r;
    switch (tolower(cl)) {
    case 'a':
        r = isalpha(c);
        break;
    case 'c':
        r = iscntrl(c);
        break;
    case 'd':
        r = isdigit(c);
        break;
    case 'g':
        r = isgraph(c);
        break;
    case 'l':
        r = islower(c);
        break;
    case 'p':
        r = ispunct(c);
        break;
    case 's':
        r = isspace(c);
        break;
    case 'u':
        r = isupper(c);
        break;
    case 'w':
        r = isalnum(c);
        break;
    case 'x':
        r = isxdigit(c);
        break;
    case 'z':
        r = c == '\0';
        break; /* deprecated, still in 5.4 */
    default:
        return cl == c; /* %. %% %] ...: the character itself */
    }
    return isupper(cl) ? !r : r != 0;
}

/* Whether c is in the set [..] from p (at '[') to close (at ']'). */
static int in_set(int c, const char *p, const char *close)
{
    int yes = 1;
    p++;
    if (*p == '^') {
        yes = 0;
        p++;
    }
    while (p < close) {
        if (*p == '%' && p + 1 < close) {
            if (in_class(c, (unsigned char)p[1]))
                return yes;
            p += 2;
        } else if (p[1] == '-' && p + 2 < close) {
            if ((unsigned char)p[0] <= c && c <= (unsigned char)p[2])
                return yes;
            p += 3;
        } else {
            if ((unsigned char)*p == c)
                return yes;
            p++;
        }
    }
    return !yes;
}

/* The end of the single-character item at p. */
static const char *item_end(struct mstate *ms, const char *p)
{
    char c = *p++;
    if (c == '%') {
        if (p >= ms->pe)
            luaL_error(ms->L, "malformed pattern (ends with '%%')");
        return p + 1;
    }
    if (c != '[')
        return p;
    if (p < ms->pe && *p == '^')
        p++;
    do { /* a ']' first in the set is a member */
        if (p >= ms->pe)
            luaL_error(ms->L, "malformed pattern (missing ']')");
        if (*p++ == '%' && p < ms->pe)
            p++;
    } while (p >= ms->pe || *p != ']');
    return p + 1;
}

/* Whether the subject character at s matches the item p..ep. */
static int single(struct mstate *ms, const char *s, const char *p,
                  const char *ep)
{
    if (s >= ms->se)
        return 0;
    int c = (unsigned char)*s;
    switch (*p) {
    case '.':
        return 1;
    case '%':
        return in_class(c, (unsigned char)p[1]);
    case '[':
        return in_set(c, p, ep - 1);
    default:
        return (unsigned char)*p == c;
    }
}

/* ---- the matcher ---------------------------------------------------- */

static const char *match(struct mstate *ms, const char *s, const char *p);

static const char *max_expand(struct mstate *ms, const char *s, const char *p,
                              const char *ep)
{
    ptrdiff_t i = 0;
    while (single(ms, s + i, p, ep)) {
        step(ms, 1);
        i++;
    }
    for (; i >= 0; i--) { /* the longest run first, then shorter ones */
        step(ms, 1);
        const char *r = match(ms, s + i, ep + 1);
        if (r)
            return r;
    }
    return NULL;
}

static const char *min_expand(struct mstate *ms, const char *s, const char *p,
                              const char *ep)
{
    for (;;) {
        step(ms, 1);
        const char *r = match(ms, s, ep + 1);
        if (r)
            return r;
        if (!single(ms, s, p, ep))
            return NULL;
        s++;
    }
}

static const char *open_capture(struct mstate *ms, const char *s, const char *p,
                                ptrdiff_t what)
{
    if (ms->ncap >= MAX_CAPS)
        luaL_error(ms->L, "too many captures");
    ms->cap[ms->ncap].at = s;
    ms->cap[ms->ncap].len = what;
    ms->ncap++;
    const char *r = match(ms, s, p);
    if (!r)
        ms->ncap--;
    return r;
}

static const char *close_capture(struct mstate *ms, const char *s,
                                 const char *p)
{
    int l = ms->ncap - 1;
    while (l >= 0 && ms->cap[l].len != CAP_OPEN)
        l--;
    if (l < 0)
        luaL_error(ms->L, "invalid pattern capture");
    ms->cap[l].len = s - ms->cap[l].at;
    const char *r = match(ms, s, p);
    if (!r)
        ms->cap[l].len = CAP_OPEN;
    return r;
}

/* %bxy at p (pointing at x). */
static const char *balance(struct mstate *ms, const char *s, const char *p)
{
    if (p + 1 >= ms->pe)
        luaL_error(ms->L, "malformed pattern (missing arguments to '%%b')");
    if (s >= ms->se || *s != *p)
        return NULL;
    int depth = 1;
    while (++s < ms->se) {
        step(ms, 1);
        if (*s == p[1]) {
            if (--depth == 0)
                return s + 1;
        } else if (*s == *p) {
            depth++;
        }
    }
    return NULL;
}

static int capture_index(struct mstate *ms, int digit)
{
    int l = digit - '1';
    if (l < 0 || l >= ms->ncap || ms->cap[l].len == CAP_OPEN)
        luaL_error(ms->L, "invalid capture index %%%d", l + 1);
    return l;
}

/* %1..%9: the text of an earlier capture again. */
static const char *backref(struct mstate *ms, const char *s, int digit)
{
    int l = capture_index(ms, digit);
    ptrdiff_t len = ms->cap[l].len;
    if (len < 0 || ms->se - s < len)
        return NULL; /* a position capture never matches text */
    step(ms, len / ZERG_SANDBOX_BYTES_PER_UNIT);
    return memcmp(ms->cap[l].at, s, (size_t)len) == 0 ? s + len : NULL;
}

/* %f[set]: between a character not in set and one in it. */
static const char *frontier(struct mstate *ms, const char *s, const char **p)
{
    const char *q = *p + 2;
    if (q >= ms->pe || *q != '[')
        luaL_error(ms->L, "missing '[' after '%%f' in pattern");
    const char *ep = item_end(ms, q);
    int prev = s == ms->s0 ? '\0' : (unsigned char)s[-1];
    int cur = s < ms->se ? (unsigned char)*s : '\0';
    *p = ep;
    return !in_set(prev, q, ep - 1) && in_set(cur, q, ep - 1) ? s : NULL;
}

/* One single-character item at *p, with its quantifier.  Returns 1 when
 * matching goes on from the new *s and *p without a recursion (a plain
 * character, or zero repeats), 0 when *r is the result. */
static int match_item(struct mstate *ms, const char **s, const char **p,
                      const char **r)
{
    const char *ep = item_end(ms, *p);
    char q = ep < ms->pe ? *ep : '\0';
    if (!single(ms, *s, *p, ep)) {
        if (q == '*' || q == '?' || q == '-') {
            *p = ep + 1;
            return 1;
        }
        *r = NULL;
        return 0;
    }
    switch (q) {
    case '?':
        if ((*r = match(ms, *s + 1, ep + 1)) != NULL)
            return 0;
        *p = ep + 1;
        return 1;
    case '+':
        *r = max_expand(ms, *s + 1, *p, ep);
        return 0;
    case '*':
        *r = max_expand(ms, *s, *p, ep);
        return 0;
    case '-':
        *r = min_expand(ms, *s, *p, ep);
        return 0;
    default:
        (*s)++, *p = ep;
        return 1;
    }
}

/* The %b, %f and %1..%9 items at p (a '%'), or 0 when p is none of them.
 * Returns 1 when matching goes on (*s and *p moved), -1 on no match. */
static int match_special(struct mstate *ms, const char **s, const char **p)
{
    const char *q = *p;
    if (q + 1 >= ms->pe)
        return 0;
    if (q[1] == 'b') {
        if ((*s = balance(ms, *s, q + 2)) == NULL)
            return -1;
        *p = q + 4;
        return 1;
    }
    if (q[1] == 'f')
        return (*s = frontier(ms, *s, p)) != NULL ? 1 : -1;
    if (isdigit((unsigned char)q[1])) {
        if ((*s = backref(ms, *s, q[1])) == NULL)
            return -1;
        *p = q + 2;
        return 1;
    }
    return 0;
}

/* The end of the match of p..pe at s, or NULL. */
static const char *match(struct mstate *ms, const char *s, const char *p)
{
    if (++ms->depth > MAX_DEPTH)
        luaL_error(ms->L, "pattern too complex");
    const char *r = s;
    for (;;) {
        step(ms, 1);
        if (p >= ms->pe) {
            r = s;
            break;
        }
        if (*p == '(') {
            r = p + 1 < ms->pe && p[1] == ')'
                    ? open_capture(ms, s, p + 2, CAP_POS)
                    : open_capture(ms, s, p + 1, CAP_OPEN);
            break;
        }
        if (*p == ')') {
            r = close_capture(ms, s, p + 1);
            break;
        }
        if (*p == '$' && p + 1 == ms->pe) {
            r = s == ms->se ? s : NULL;
            break;
        }
        int k = *p == '%' ? match_special(ms, &s, &p) : 0;
        if (k < 0) {
            r = NULL;
            break;
        }
        if (k == 0 && !match_item(ms, &s, &p, &r))
            break;
    }
    ms->depth--;
    return r;
}

/* ---- results -------------------------------------------------------- */

/* Capture i, or the whole match s..e when there are no captures. */
static void push_capture(struct mstate *ms, int i, const char *s, const char *e)
{
    if (i >= ms->ncap) {
        if (i != 0)
            luaL_error(ms->L, "invalid capture index %%%d", i + 1);
        lua_pushlstring(ms->L, s, (size_t)(e - s));
        return;
    }
    ptrdiff_t len = ms->cap[i].len;
    if (len == CAP_OPEN)
        luaL_error(ms->L, "unfinished capture");
    if (len == CAP_POS)
        lua_pushinteger(ms->L, ms->cap[i].at - ms->s0 + 1);
    else
        lua_pushlstring(ms->L, ms->cap[i].at, (size_t)len);
}

/* The captures (s NULL: none means nothing, else the whole match). */
static int push_captures(struct mstate *ms, const char *s, const char *e)
{
    int n = ms->ncap == 0 && s ? 1 : ms->ncap;
    luaL_checkstack(ms->L, n, "too many captures");
    for (int i = 0; i < n; i++)
        push_capture(ms, i, s, e);
    return n;
}

/* A start position as string.find reads it: 1-based, negative from the
 * end, clamped to 1; returned 0-based. */
static size_t start_of(lua_State *L, int arg, size_t len)
{
    lua_Integer pos = luaL_optinteger(L, arg, 1);
    if (pos > 0)
        return (size_t)pos - 1;
    if (pos == 0 || pos < -(lua_Integer)len)
        return 0;
    return len + (size_t)pos;
}

static int has_specials(const char *p, size_t lp)
{
    for (size_t i = 0; i < lp; i++)
        if (p[i] && strchr("^$*+?.([%-", p[i]))
            return 1;
    return 0;
}

static int plain_find(lua_State *L, const char *s, size_t ls, size_t init,
                      const char *p, size_t lp)
{
    zerg_vm_charge(L, 1 + (int64_t)((ls - init) / ZERG_SANDBOX_BYTES_PER_UNIT));
    const char *at = memmem(s + init, ls - init, p, lp);
    if (!at) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushinteger(L, at - s + 1);
    lua_pushinteger(L, (lua_Integer)(at - s + lp));
    return 2;
}

static int find_or_match(lua_State *L, int find)
{
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    size_t init = start_of(L, 3, ls);
    if (init > ls) {
        lua_pushnil(L);
        return 1;
    }
    if (find && (lua_toboolean(L, 4) || !has_specials(p, lp)))
        return plain_find(L, s, ls, init, p, lp);
    int anchor = lp > 0 && *p == '^';
    struct mstate ms;
    ms_init(&ms, L, s, ls, p + anchor, lp - (size_t)anchor);
    const char *at = s + init;
    do {
        ms.depth = ms.ncap = 0;
        const char *e = match(&ms, at, p + anchor);
        if (e) {
            flush(&ms);
            if (!find)
                return push_captures(&ms, at, e);
            lua_pushinteger(L, at - s + 1);
            lua_pushinteger(L, e - s);
            return push_captures(&ms, NULL, NULL) + 2;
        }
    } while (at++ < ms.se && !anchor);
    flush(&ms);
    lua_pushnil(L);
    return 1;
}

static int sb_find(lua_State *L)
{
    return find_or_match(L, 1);
}

static int sb_match(lua_State *L)
{
    return find_or_match(L, 0);
}

/* ---- gmatch --------------------------------------------------------- */

struct gmatch_pos {
    size_t next;    /* where the next try starts */
    ptrdiff_t last; /* end of the last match, -1 = none */
};

/* Upvalues: subject, pattern, position. */
static int gmatch_next(lua_State *L)
{
    size_t ls, lp;
    const char *s = lua_tolstring(L, lua_upvalueindex(1), &ls);
    const char *p = lua_tolstring(L, lua_upvalueindex(2), &lp);
    struct gmatch_pos *g = lua_touserdata(L, lua_upvalueindex(3));
    struct mstate ms;
    ms_init(&ms, L, s, ls, p, lp);
    for (size_t at = g->next; at <= ls; at++) {
        ms.depth = ms.ncap = 0;
        const char *e = match(&ms, s + at, p);
        if (e && e - s != g->last) { /* not the empty match just after */
            g->next = (size_t)(e - s);
            g->last = e - s;
            flush(&ms);
            return push_captures(&ms, s + at, e);
        }
    }
    g->next = ls + 1;
    flush(&ms);
    return 0;
}

static int sb_gmatch(lua_State *L)
{
    size_t ls;
    luaL_checklstring(L, 1, &ls);
    luaL_checkstring(L, 2);
    size_t init = start_of(L, 3, ls);
    lua_settop(L, 2);
    struct gmatch_pos *g = lua_newuserdatauv(L, sizeof *g, 0);
    g->next = init > ls ? ls + 1 : init;
    g->last = -1;
    lua_pushcclosure(L, gmatch_next, 3);
    return 1;
}

/* ---- gsub ----------------------------------------------------------- */

/* The replacement string (arg 3) with %0..%9 and %% expanded. */
static void add_string(struct mstate *ms, luaL_Buffer *b, const char *s,
                       const char *e)
{
    lua_State *L = ms->L;
    size_t l;
    const char *r = lua_tolstring(L, 3, &l), *end = r + l;
    step(ms, 1 + (int64_t)(l / ZERG_SANDBOX_BYTES_PER_UNIT));
    while (r < end) {
        const char *pc = memchr(r, '%', (size_t)(end - r));
        if (!pc) {
            luaL_addlstring(b, r, (size_t)(end - r));
            return;
        }
        luaL_addlstring(b, r, (size_t)(pc - r));
        char d = pc + 1 < end ? pc[1] : '\0';
        if (d == '%') {
            luaL_addchar(b, '%');
        } else if (d == '0') {
            luaL_addlstring(b, s, (size_t)(e - s));
        } else if (isdigit((unsigned char)d)) {
            push_capture(ms, d - '1', s, e);
            luaL_tolstring(L, -1, NULL);
            lua_remove(L, -2);
            luaL_addvalue(b);
        } else {
            luaL_error(L, "invalid use of '%%' in replacement string");
        }
        r = pc + 2;
    }
}

/* Adds the replacement of the match s..e; 1 if it changed the text. */
static int add_value(struct mstate *ms, luaL_Buffer *b, const char *s,
                     const char *e, int tr)
{
    lua_State *L = ms->L;
    if (tr == LUA_TSTRING || tr == LUA_TNUMBER) {
        add_string(ms, b, s, e);
        return 1;
    }
    if (tr == LUA_TFUNCTION) {
        lua_pushvalue(L, 3);
        int n = push_captures(ms, s, e);
        lua_call(L, n, 1);
    } else {
        push_capture(ms, 0, s, e);
        lua_gettable(L, 3);
    }
    if (!lua_toboolean(L, -1)) { /* nil or false: keep the match */
        lua_pop(L, 1);
        luaL_addlstring(b, s, (size_t)(e - s));
        return 0;
    }
    if (!lua_isstring(L, -1))
        return luaL_error(L, "invalid replacement value (a %s)",
                          luaL_typename(L, -1));
    luaL_addvalue(b);
    return 1;
}

static int sb_gsub(lua_State *L)
{
    size_t ls, lp;
    const char *s = luaL_checklstring(L, 1, &ls);
    const char *p = luaL_checklstring(L, 2, &lp);
    int tr = lua_type(L, 3);
    lua_Integer max_n = luaL_optinteger(L, 4, (lua_Integer)ls + 1);
    luaL_argexpected(L,
                     tr == LUA_TNUMBER || tr == LUA_TSTRING ||
                         tr == LUA_TFUNCTION || tr == LUA_TTABLE,
                     3, "string/function/table");
    int anchor = lp > 0 && *p == '^', changed = 0;
    lua_Integer n = 0;
    struct mstate ms;
    ms_init(&ms, L, s, ls, p + anchor, lp - (size_t)anchor);
    const char *at = s, *last = NULL;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    while (n < max_n) {
        ms.depth = ms.ncap = 0;
        const char *e = match(&ms, at, p + anchor);
        if (e && e != last) {
            n++;
            changed |= add_value(&ms, &b, at, e, tr);
            at = last = e;
        } else if (at < ms.se) {
            luaL_addchar(&b, *at++);
        } else {
            break;
        }
        if (anchor)
            break;
    }
    flush(&ms);
    if (!changed) {
        lua_pushvalue(L, 1);
    } else {
        luaL_addlstring(&b, at, (size_t)(ms.se - at));
        luaL_pushresult(&b);
    }
    lua_pushinteger(L, n);
    return 2;
}

void zerg_sandbox_bound_patterns(lua_State *L)
{
    static const luaL_Reg fns[] = {
        {"find", sb_find}, {"match", sb_match}, {"gmatch", sb_gmatch},
        {"gsub", sb_gsub}, {NULL, NULL},
    };
    lua_getglobal(L, "string"); /* string */
    luaL_setfuncs(L, fns, 0);
    lua_pop(L, 1);
}
