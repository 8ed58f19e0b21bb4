/* adapter.c - the agent CLIs zerg drives, one row each (DESIGN §20).
 *
 * A row says how the CLI is run headless with the prompt on stdin (no
 * argv limit), what it needs in its environment, how its session is
 * continued, how a login is checked before a rush, and what a user must
 * do when it is missing or refused.  Its stream reader is
 * zerg_agent_parse (stream.c, stream_codex.c, stream_gemini.c); the
 * meaning of its failures is src/agent/failure.c.  What each CLI was
 * measured to do is docs/wiki/Agents.md. */
#include "zerg/agent.h"

#include <string.h>

#include "zerg/config.h"

/* Print mode, one JSON line per event (partial messages too, so a long
 * answer streaming in is progress) and no permission prompts (nobody is
 * there to answer them). */
static const char *const CLAUDE_ARGS[] = {"--print",
                                          "--output-format",
                                          "stream-json",
                                          "--verbose",
                                          "--include-partial-messages",
                                          "--dangerously-skip-permissions",
                                          NULL};
static const char *const CLAUDE_RESUME[] = {"--resume", NULL};
static const char *const CLAUDE_KEYS[] = {"ANTHROPIC_API_KEY",
                                          "CLAUDE_CODE_OAUTH_TOKEN", NULL};

/* --dangerously-bypass-approvals-and-sandbox: zerg's worker (its own
 * worktree, a container in container mode) is the sandbox, as for
 * Claude's --dangerously-skip-permissions; "-" reads the prompt from
 * stdin. */
static const char *const CODEX_ARGS[] = {
    "exec", "--json", "--skip-git-repo-check",
    "--dangerously-bypass-approvals-and-sandbox", NULL};
static const char *const CODEX_RESUME[] = {"resume", NULL};
static const char *const CODEX_KEYS[] = {"CODEX_API_KEY", "OPENAI_API_KEY",
                                         NULL};
static const char *const CODEX_LOGIN[] = {"login", "status", NULL};

/* -p "" with the prompt on stdin: Gemini appends stdin to -p's text.
 * Without GEMINI_CLI_TRUST_WORKSPACE a fresh worktree is untrusted and
 * headless Gemini exits 55 (measured), or downgrades --yolo. */
static const char *const GEMINI_ARGS[] = {
    "--output-format", "stream-json", "--yolo", "-p", "", NULL};
static const char *const GEMINI_ENV[] = {"GEMINI_CLI_TRUST_WORKSPACE=true",
                                         NULL};
static const char *const GEMINI_KEYS[] = {"GEMINI_API_KEY", "GOOGLE_API_KEY",
                                          "GOOGLE_GENAI_USE_VERTEXAI",
                                          "GOOGLE_GENAI_USE_GCA", NULL};
static const char *const NONE[] = {NULL};

static const struct zerg_agent_adapter ADAPTERS[ZERG_AGENT_NCLIS] = {
    [ZERG_AGENT_CLAUDE] =
        {
            .cli = ZERG_AGENT_CLAUDE,
            .name = "claude",
            .product = "Claude Code",
            .args = CLAUDE_ARGS,
            .env = NONE,
            .resume = CLAUDE_RESUME,
            .key_env = CLAUDE_KEYS,
            .login = NULL,
            .fix_login = "set ANTHROPIC_API_KEY in the worker's environment "
                         "or mount a logged-in ~/.claude (see "
                         "docs/wiki/Agents.md)",
            .fix_key = "ANTHROPIC_API_KEY was refused: set a valid key (see "
                       "docs/wiki/Agents.md)",
            .fix_install = "install the Claude Code CLI where the workers run "
                           "(`npm install -g @anthropic-ai/claude-code`; "
                           "scripts/install-agent.sh claude installs the "
                           "pinned version; in the image in container mode)",
        },
    [ZERG_AGENT_CODEX] =
        {
            .cli = ZERG_AGENT_CODEX,
            .name = "codex",
            .product = "Codex CLI",
            .args = CODEX_ARGS,
            .stdin_arg = "-",
            .env = NONE,
            .resume = CODEX_RESUME,
            .key_env = CODEX_KEYS,
            .login = CODEX_LOGIN,
            .fix_login = "set CODEX_API_KEY in the worker's environment or "
                         "run `codex login` as the user zerg runs as (see "
                         "docs/wiki/Agents.md)",
            .fix_key = "the API refused Codex's key: set a valid "
                       "CODEX_API_KEY or log in again with `codex login`",
            .fix_install = "install the Codex CLI where the workers run "
                           "(`npm install -g @openai/codex`; "
                           "scripts/install-agent.sh codex installs the pinned "
                           "version; in the image in container mode)",
        },
    [ZERG_AGENT_GEMINI] =
        {
            .cli = ZERG_AGENT_GEMINI,
            .name = "gemini",
            .product = "Gemini CLI",
            .args = GEMINI_ARGS,
            .env = GEMINI_ENV,
            .resume = NULL,
            .key_env = GEMINI_KEYS,
            .login = NULL,
            .fix_login = "set GEMINI_API_KEY in the worker's environment, or "
                         "an auth method in ~/.gemini/settings.json (see "
                         "docs/wiki/Agents.md)",
            .fix_key = "the API refused Gemini's key: set a valid "
                       "GEMINI_API_KEY",
            .fix_install = "install the Gemini CLI where the workers run "
                           "(`npm install -g @google/gemini-cli`; "
                           "scripts/install-agent.sh gemini installs the "
                           "pinned version; in the image in container mode)",
        },
};

const struct zerg_agent_adapter *zerg_agent_adapter(enum zerg_agent_cli cli)
{
    return (unsigned)cli < ZERG_AGENT_NCLIS ? &ADAPTERS[cli] : NULL;
}

const struct zerg_agent_adapter *zerg_agent_adapter_named(const char *name)
{
    for (int i = 0; name && i < ZERG_AGENT_NCLIS; i++)
        if (!strcmp(ADAPTERS[i].name, name))
            return &ADAPTERS[i];
    return NULL;
}

const struct zerg_agent_adapter *zerg_agent_for(const struct zerg_config *c)
{
    switch ((enum zerg_executor_kind)c->executor_kind) {
    case ZERG_EXECUTOR_CLAUDE:
        return &ADAPTERS[ZERG_AGENT_CLAUDE];
    case ZERG_EXECUTOR_CODEX:
        return &ADAPTERS[ZERG_AGENT_CODEX];
    case ZERG_EXECUTOR_GEMINI:
        return &ADAPTERS[ZERG_AGENT_GEMINI];
    case ZERG_EXECUTOR_COMMAND:
        break;
    }
    return NULL;
}

const char *zerg_agent_bin(const struct zerg_config *c,
                           const struct zerg_agent_adapter *ad)
{
    if (!ad)
        return NULL;
    const char *bin = ad->cli == ZERG_AGENT_CODEX    ? c->executor_codex
                      : ad->cli == ZERG_AGENT_GEMINI ? c->executor_gemini
                                                     : c->executor_claude;
    return bin && *bin ? bin : ad->name;
}

const char *zerg_agent_bin_key(const struct zerg_agent_adapter *ad)
{
    static const char *const KEYS[ZERG_AGENT_NCLIS] = {
        [ZERG_AGENT_CLAUDE] = "executor.claude",
        [ZERG_AGENT_CODEX] = "executor.codex",
        [ZERG_AGENT_GEMINI] = "executor.gemini",
    };
    return ad ? KEYS[ad->cli] : NULL;
}
