/* fuzz_graph.c - libFuzzer target for the task graph loader.
 *
 * Feeds arbitrary bytes to zerg_graph_parse: whatever the input, it must
 * either return a graph that frees cleanly or an error with a message,
 * never crash, leak or read out of bounds.  Seeds: corpus/graph/. */
#include "zerg/err.h"
#include "zerg/graph.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct zerg_graph *g = NULL;
    struct zerg_err err = {0};
    int rc = zerg_graph_parse(&g, "fuzz.json", (const char *)data, size, &err);
    if ((rc == 0) != (g != NULL) || (rc != 0 && err.msg[0] == '\0'))
        abort(); /* a result must be a graph or an explained error */
    if (g) {
        /* Touch what the orchestrator reads first. */
        for (size_t i = 0; i < g->ntasks; i++)
            if (zerg_graph_find(g, g->tasks[i].id) != (ssize_t)i)
                abort();
    }
    zerg_graph_free(g);
    return 0;
}
