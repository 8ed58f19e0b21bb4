/* heap.h - a binary min-heap of size_t over storage the caller owns.
 *
 * Both of zerg's schedulers pop "the smallest number first": the graph's
 * dependency order (task indexes, so file order wins) and the dag
 * schedule's ready set (ranks of preference).  v must hold as many
 * values as are ever in the heap at once; n is how many are. */
#ifndef ZERG_HEAP_H
#define ZERG_HEAP_H

#include <stddef.h>

struct zerg_heap {
    size_t *v, n;
};

void zerg_heap_push(struct zerg_heap *h, size_t x);
size_t zerg_heap_pop(struct zerg_heap *h); /* n > 0 */

#endif
