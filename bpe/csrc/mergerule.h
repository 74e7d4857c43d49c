/* The merge rule's C: what Cython would not spell as fast (bpe/_mergerule.pxd). */
#ifndef BPE_MERGERULE_H
#define BPE_MERGERULE_H

#include <stddef.h>
#include <string.h>

/* a[i] = a[i + 1] for each i from `from` up to `to`, 16 bytes at a time:
   a[to + 3] must be in the array. Closes the gap a merge leaves in a short
   array of parts. (gcc makes the plain loop a call to memmove, which for the
   few ids moved cost more than the merge around it.) */
static inline void bpe_close_gap(void *array, ptrdiff_t from, ptrdiff_t to) {
    char *a = (char *)array;
    char moved[16];
    for (ptrdiff_t i = from; i < to; i += 4) {
        memcpy(moved, a + 4 * (i + 1), 16);
        memcpy(a + 4 * i, moved, 16);
    }
}

#endif
