"""Token ids to lists of Python ints, fast: what ``encode`` returns.

Why a module of its own: this is the one place that manages reference counts
and garbage-collector tracking by hand, and the reasoning for it (below, in
``ids_to_lists``) belongs beside the code.
"""
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.sequence cimport PySequence_Fast_ITEMS
from libc.stdint cimport int64_t
from libc.string cimport memset

import numpy as np

from bpe._checks cimport check_offsets
from bpe._memory cimport mem_alloc, mem_free
from bpe._types cimport offset_t, out_id_t

cdef enum:
    ZERO_ALL_PER_ID = 8     # at least one id per this many of the vocabulary: zero every count

cdef extern from "Python.h":
    Py_ssize_t Py_REFCNT(PyObject* o)
    void Py_SET_REFCNT(PyObject* o, Py_ssize_t refcnt)
    void PyObject_GC_UnTrack(void* o)
    void incref "Py_INCREF" (PyObject* o)


def ids_to_list(const out_id_t[::1] ids, tuple id_objects):
    """``ids`` as a list of Python ints, the prebuilt ``id_objects[i]`` for id i."""
    return ids_to_lists(ids, np.array([0, ids.shape[0]], dtype=np.int64), id_objects)[0]


cdef list ids_list(const out_id_t* ids, Py_ssize_t n, tuple id_objects):
    """``ids[:n]`` as a list of the prebuilt ints, under the GIL: for the ids of one
    document, which ``EncodeKernel.encode_str_to_list`` builds in the call that
    encodes it. A reference per id, one after another: for a few thousand ids
    the count per distinct id of ``ids_to_lists`` (and its vocabulary-sized
    array) costs more than it saves. Untracked by the garbage collector, as
    there (see why below)."""
    cdef Py_ssize_t n_objects = len(id_objects)
    cdef PyObject** objects = PySequence_Fast_ITEMS(id_objects)
    cdef PyObject** items
    cdef PyObject* obj
    cdef Py_ssize_t k
    for k in range(n):
        if ids[k] >= n_objects:
            raise ValueError(f"token id {ids[k]} has no prebuilt int")
    result = PyList_New(n)
    PyObject_GC_UnTrack(<PyObject*>result)
    items = PySequence_Fast_ITEMS(result)
    # Nothing fails from here on: each slot gets its reference.
    for k in range(n):
        obj = objects[ids[k]]
        incref(obj)
        items[k] = obj
    return result


def ids_to_lists(const out_id_t[::1] ids, const offset_t[::1] offsets, tuple id_objects):
    """``[ids[offsets[t]:offsets[t + 1]] as a list for each t]``, from prebuilt ints.

    Building lists is what makes ``encode`` slower than ``encode_to_numpy``, and
    it needs the GIL, which threads encoding at once queue for. Taking a
    reference per id touched each int object: a cache miss per id (~8.5 ns).
    So each distinct id's references are added in one step, under the GIL, and
    the pointers are written without it, into lists no other code can see yet.

    The lists stay untracked by the cyclic garbage collector: a list of ints
    cannot be part of a reference cycle (CPython untracks tuples and dicts of
    atomic values for the same reason). Tracked, every collection while they
    live walked their items, one cache miss per id under the GIL: 11% of the
    time of a 2-thread ``encode_batch``, which then scaled 1.5-1.75x instead
    of ~1.9x. The one cost: a cycle a caller later builds through such a list
    (by storing in it a container that refers back to it) is not collected.
    """
    cdef Py_ssize_t n = ids.shape[0]
    cdef Py_ssize_t n_lists = offsets.shape[0] - 1
    cdef Py_ssize_t n_objects = len(id_objects)
    cdef Py_ssize_t t, k, n_distinct = 0
    cdef out_id_t token_id
    cdef int64_t bad = -1
    cdef PyObject** objects = PySequence_Fast_ITEMS(id_objects)
    cdef int64_t* uses = NULL
    cdef out_id_t* distinct = NULL
    cdef PyObject*** items = NULL      # each list's item array
    cdef PyObject* obj
    check_offsets(offsets, -1, n, "id offsets")
    try:
        with nogil:
            # A count per id of the vocabulary, zeroed where it will be read: all
            # of it for many ids, else only the ids' own (zeroing a vocabulary's
            # worth per call, 1.6 MB for o200k, was a quarter of encode(doc)'s
            # time on documents of a few KB).
            uses = <int64_t*>mem_alloc((n_objects + 1) * sizeof(int64_t))
            distinct = <out_id_t*>mem_alloc((min(n, n_objects) + 1) * sizeof(out_id_t))
            items = <PyObject***>mem_alloc((n_lists + 1) * sizeof(PyObject**))
            if uses == NULL or distinct == NULL or items == NULL:
                n = 0
                bad = -2
            elif n >= n_objects // ZERO_ALL_PER_ID:
                memset(uses, 0, (n_objects + 1) * sizeof(int64_t))
            else:
                for k in range(n):
                    if ids[k] < n_objects:
                        uses[ids[k]] = 0
            for k in range(n):
                token_id = ids[k]
                if token_id >= n_objects:
                    bad = token_id
                    break
                if uses[token_id] == 0:
                    distinct[n_distinct] = token_id
                    n_distinct += 1
                uses[token_id] += 1
        if bad == -2:
            raise MemoryError()
        if bad >= 0:
            raise ValueError(f"token id {bad} has no prebuilt int")
        result = PyList_New(n_lists)
        for t in range(n_lists):
            one = PyList_New(offsets[t + 1] - offsets[t])
            PyObject_GC_UnTrack(<PyObject*>one)
            items[t] = PySequence_Fast_ITEMS(one)
            Py_INCREF(one)
            PyList_SET_ITEM(result, t, one)
        # Nothing fails from here on: each slot below gets exactly one of these references.
        for k in range(n_distinct):
            obj = objects[distinct[k]]
            Py_SET_REFCNT(obj, Py_REFCNT(obj) + uses[distinct[k]])
        with nogil:
            for t in range(n_lists):
                for k in range(offsets[t], offsets[t + 1]):
                    items[t][k - offsets[t]] = objects[ids[k]]
        return result
    finally:
        mem_free(uses)
        mem_free(distinct)
        mem_free(items)
