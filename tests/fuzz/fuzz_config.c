/* fuzz_config.c - libFuzzer target for the .zerg/config.yaml loader.
 *
 * Feeds arbitrary bytes to zerg_config_load_string over the defaults:
 * whatever the input, the loader must either apply it or return an error
 * with a message, and leave a config that frees cleanly - never crash,
 * leak or read out of bounds.  Seeds: corpus/config/. */
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/json.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Counts warnings so the unknown-key path ("did you mean") runs too: with
 * a NULL callback the loader skips building those messages. */
static void count_warning(void *ud, const char *msg)
{
    if (msg == NULL || msg[0] == '\0')
        abort(); /* a warning must say something */
    ++*(unsigned *)ud;
}

/* An argv the config owns must stay NULL-terminated after any load. */
static void check_argv(const struct zerg_argv *a)
{
    if (a->v == NULL || a->v[a->n] != NULL)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct zerg_config c;
    struct zerg_err err = {0};
    unsigned nwarn = 0;

    zerg_config_defaults(&c);
    int rc = zerg_config_load_string(&c, "fuzz.yaml", (const char *)data, size,
                                     count_warning, &nwarn, &err);
    if (rc != 0 && err.msg[0] == '\0')
        abort(); /* a rejected file must be explained */
    check_argv(&c.launch_prefix);
    check_argv(&c.executor);
    check_argv(&c.container_run_args);
    if (c.executor.n == 0)
        abort(); /* the executor is never empty */
    if (rc == 0) {
        /* Reflection reads every field the load may have written. */
        zerg_json *j = zerg_config_to_json(&c);
        if (j == NULL)
            abort();
        zerg_json_free(j);
    }
    zerg_config_free(&c);
    return 0;
}
