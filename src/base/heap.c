/* heap.c - a binary min-heap of size_t (see zerg/heap.h). */
#include "zerg/heap.h"

void zerg_heap_push(struct zerg_heap *h, size_t x)
{
    size_t i = h->n++;
    for (; i && h->v[(i - 1) / 2] > x; i = (i - 1) / 2)
        h->v[i] = h->v[(i - 1) / 2];
    h->v[i] = x;
}

size_t zerg_heap_pop(struct zerg_heap *h)
{
    size_t top = h->v[0], x = h->v[--h->n], i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= h->n)
            break;
        if (k + 1 < h->n && h->v[k + 1] < h->v[k])
            k++;
        if (h->v[k] >= x)
            break;
        h->v[i] = h->v[k];
        i = k;
    }
    if (h->n)
        h->v[i] = x;
    return top;
}
