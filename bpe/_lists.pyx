"""Token ids to lists of Python ints, fast: what ``encode`` returns; and ids
laid out anew: as a token array of records (``ids_with_separators``), and
with ids that stand for several expanded (``Expanding``, ``expand_ids``).

Why a module of its own: this is the one place that manages reference counts
and garbage-collector tracking by hand, and the reasoning for it (below, in
``PrebuiltInts`` and ``ids_to_lists``) belongs beside the code.
"""
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.long cimport PyLong_FromSsize_t
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.sequence cimport PySequence_Fast_ITEMS
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t
from libc.string cimport memset

import numpy as np

from bpe._checks cimport check_offsets
from bpe._memory cimport allocation_fails, mem_alloc, mem_free
from bpe._types cimport offset_t, out_id_t

cdef enum:
    ZERO_ALL_PER_ID = 8     # at least one id per this many of the vocabulary: zero every count

cdef extern from "Python.h":
    Py_ssize_t Py_REFCNT(PyObject* o)
    void Py_SET_REFCNT(PyObject* o, Py_ssize_t refcnt)
    void PyObject_GC_UnTrack(void* o)
    void incref "Py_INCREF" (PyObject* o)

cdef extern from "csrc/lists.h":
    object new_list_unfilled "bpe_list_unfilled" (Py_ssize_t n, PyObject*** items)
    void list_filled "bpe_list_filled" (PyObject* list, Py_ssize_t n) nogil


cdef inline object list_unfilled(Py_ssize_t n, PyObject*** items):
    """``bpe_list_unfilled``, whose array allocation tests can make fail (``fail_allocation``)."""
    if n > 0 and allocation_fails():
        raise MemoryError()
    return new_list_unfilled(n, items)


cdef extern from "csrc/lists.h":
    bint PLAIN_REFCOUNT "BPE_PLAIN_REFCOUNT"

# The count an immortal prebuilt int starts from: references taken without
# counting each bring it one closer to zero when they go, and no process lives
# to let go of 2^61 of them (a billion a second for 70 years).
cdef Py_ssize_t IMMORTAL_COUNT = (<Py_ssize_t>1) << 62
cdef tuple shared_immortals = ()      # every immortal int made so far, by value


cdef class PrebuiltInts:
    """The Python ints 0 .. n-1 that lists of ids are built from, one object per id.

    Lists hold references to these instead of new ints. Where reference counts
    are plain counts (``PLAIN_REFCOUNT``), the ints are immortal: each starts
    with a count of ``IMMORTAL_COUNT``, and a list takes its references without
    counting them. Counting them was most of the cost of building lists: a
    cache miss per id, or a pass counting each distinct id's uses and an
    update per distinct id under the GIL (see ``ids_to_lists``). Immortal ints
    are made once per process and shared by every tokenizer (they cannot be
    freed): the largest vocabulary's worth, about 40 bytes an id (an int
    object and a slot in each tuple of them). Elsewhere, and with
    ``immortal=False`` (what tests use to force that path), the ints are
    ordinary and every reference is counted.

    Ids in ``far`` (special tokens far above the vocabulary, at or past ``n``)
    have no prebuilt int, so that no id makes memory grow with it: a list
    that holds one is built int by int instead (``slow_list``).
    """

    def __cinit__(self, Py_ssize_t n, bint immortal=True, far=()):
        global shared_immortals
        cdef Py_ssize_t k, have = len(shared_immortals)
        cdef object one
        if n < 0:
            raise ValueError(f"{n} ints asked for")
        self.far = frozenset(int(token_id) for token_id in far)
        self.immortal = immortal and PLAIN_REFCOUNT
        if not self.immortal:
            self.objects = tuple(range(n))
            return
        if n > have:
            made = []
            for k in range(have, n):
                one = PyLong_FromSsize_t(k)
                # Small ints are CPython's own, shared: they too only ever gain
                # references that outlive the count taken here.
                Py_SET_REFCNT(<PyObject*>one, Py_REFCNT(<PyObject*>one) + IMMORTAL_COUNT)
                made.append(one)
            shared_immortals = shared_immortals + tuple(made)
        self.objects = shared_immortals[:n]

    def __len__(self):
        return len(self.objects)


def ids_to_list(const out_id_t[::1] ids, PrebuiltInts ints):
    """``ids`` as a list of Python ints, the prebuilt ``ints.objects[i]`` for id i."""
    return ids_to_lists(ids, np.array([0, ids.shape[0]], dtype=np.int64), ints)[0]


cdef list ids_list(const out_id_t* ids, Py_ssize_t n, PrebuiltInts ints):
    """``ids[:n]`` as a list of the prebuilt ints, under the GIL: for the ids of one
    document, which ``EncodeKernel.encode_str_to_list`` builds in the call that
    encodes it. Counted ints get a reference per id, one after another: for a
    few thousand ids the count per distinct id of ``ids_to_lists`` (and its
    vocabulary-sized array) costs more than it saves. Untracked by the garbage
    collector, as there (see why below)."""
    cdef Py_ssize_t n_objects = len(ints.objects)
    cdef PyObject** objects = PySequence_Fast_ITEMS(ints.objects)
    cdef PyObject** items
    cdef PyObject* obj
    cdef Py_ssize_t k
    for k in range(n):
        if ids[k] >= n_objects:
            return slow_list(ids, n, ints)
    result = list_unfilled(n, &items)
    PyObject_GC_UnTrack(<PyObject*>result)
    # Nothing fails from here on: each slot gets its reference.
    if ints.immortal:
        for k in range(n):
            items[k] = objects[ids[k]]
    else:
        for k in range(n):
            obj = objects[ids[k]]
            incref(obj)
            items[k] = obj
    list_filled(<PyObject*>result, n)
    return result


cdef list slow_list(const out_id_t* ids, Py_ssize_t n, PrebuiltInts ints):
    """``ids[:n]`` as a list, the prebuilt ints where there are and a new int
    for each id in ``ints.far``: for the rare list that holds a special token
    far above the vocabulary. Any other id raises ValueError."""
    cdef Py_ssize_t n_objects = len(ints.objects)
    cdef Py_ssize_t k
    cdef list result = [None] * n
    for k in range(n):
        if ids[k] < n_objects:
            result[k] = ints.objects[ids[k]]
        elif ids[k] in ints.far:
            result[k] = PyLong_FromSsize_t(ids[k])
        else:
            raise ValueError(f"token id {ids[k]} has no prebuilt int")
    return result


def ids_to_lists(const out_id_t[::1] ids, const offset_t[::1] offsets, PrebuiltInts ints):
    """``[ids[offsets[t]:offsets[t + 1]] as a list for each t]``, from prebuilt ints
    (see ``lists_of_ids``)."""
    check_offsets(offsets, -1, ids.shape[0], "id offsets")
    if offsets.shape[0] == 0:
        return []
    return lists_of_ids(&ids[0] if ids.shape[0] > 0 else NULL, &offsets[0], offsets.shape[0] - 1, ints)


cdef list lists_of_ids(const out_id_t* ids, const offset_t* offsets, Py_ssize_t n_lists, PrebuiltInts ints):
    """``[ids[offsets[t]:offsets[t + 1]] as a list for each t]``, from prebuilt ints;
    the offsets, ``n_lists + 1`` of them, run from 0 and never fall.

    Building lists is what makes ``encode`` slower than ``encode_to_numpy``, and
    it needs the GIL, which threads encoding at once queue for. So the
    pointers are written without it, into lists no other code can see yet.
    Immortal ints (``PrebuiltInts``) need nothing else. For counted ones,
    taking a reference per id touched each int object: a cache miss per id
    (~8.5 ns). So each distinct id's references are added in one step, under
    the GIL, after a pass that counts them without it.

    The lists stay untracked by the cyclic garbage collector: a list of ints
    cannot be part of a reference cycle (CPython untracks tuples and dicts of
    atomic values for the same reason). Tracked, every collection while they
    live walked their items, one cache miss per id under the GIL: 11% of the
    time of a 2-thread ``encode_batch``, which then scaled 1.5-1.75x instead
    of ~1.9x. The one cost: a cycle a caller later builds through such a list
    (by storing in it a container that refers back to it) is not collected.
    """
    cdef Py_ssize_t n = offsets[n_lists]
    cdef Py_ssize_t n_objects = len(ints.objects)
    cdef Py_ssize_t t, k, n_distinct = 0
    cdef bint counted = not ints.immortal
    cdef out_id_t token_id
    cdef int64_t bad = -1
    cdef PyObject** objects = PySequence_Fast_ITEMS(ints.objects)
    cdef int64_t* uses = NULL
    cdef out_id_t* distinct = NULL
    cdef PyObject*** items = NULL      # each list's item array
    cdef PyObject** made = NULL        # each list
    cdef PyObject* obj
    try:
        items = <PyObject***>mem_alloc((n_lists + 1) * sizeof(PyObject**))
        made = <PyObject**>mem_alloc((n_lists + 1) * sizeof(PyObject*))
        if items == NULL or made == NULL:
            raise MemoryError()
        if counted:
            with nogil:
                # A count per id of the vocabulary, zeroed where it will be read: all
                # of it for many ids, else only the ids' own (zeroing a vocabulary's
                # worth per call, 1.6 MB for o200k, was a quarter of encode(doc)'s
                # time on documents of a few KB).
                uses = <int64_t*>mem_alloc((n_objects + 1) * sizeof(int64_t))
                distinct = <out_id_t*>mem_alloc((min(n, n_objects) + 1) * sizeof(out_id_t))
                if uses == NULL or distinct == NULL:
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
                return slow_lists(ids, offsets, n_lists, ints)
        result = PyList_New(n_lists)
        for t in range(n_lists):
            one = list_unfilled(offsets[t + 1] - offsets[t], &items[t])
            PyObject_GC_UnTrack(<PyObject*>one)
            made[t] = <PyObject*>one
            Py_INCREF(one)
            PyList_SET_ITEM(result, t, one)
        # Counted: each slot below gets exactly one of these references, and no
        # id is out of range (checked above). Immortal ints take no references,
        # so their ids are checked as they are written, in the one GIL release:
        # a list is marked filled only once all its items are in, so on a bad
        # id the lists left unfilled hold nothing when they are freed.
        for k in range(n_distinct):
            obj = objects[distinct[k]]
            Py_SET_REFCNT(obj, Py_REFCNT(obj) + uses[distinct[k]])
        with nogil:
            for t in range(n_lists):
                for k in range(offsets[t], offsets[t + 1]):
                    token_id = ids[k]
                    if token_id >= n_objects:
                        bad = token_id
                        break
                    items[t][k - offsets[t]] = objects[token_id]
                if bad >= 0:
                    break
                list_filled(made[t], offsets[t + 1] - offsets[t])
        if bad >= 0:
            # The lists left unfilled hold nothing: they go with ``result``.
            return slow_lists(ids, offsets, n_lists, ints)
        return result
    finally:
        mem_free(uses)
        mem_free(distinct)
        mem_free(items)
        mem_free(made)


cdef list slow_lists(const out_id_t* ids, const offset_t* offsets, Py_ssize_t n_lists, PrebuiltInts ints):
    """``lists_of_ids`` built int by int (``slow_list``): where an id has no prebuilt int."""
    return [slow_list(ids + offsets[t], offsets[t + 1] - offsets[t], ints) for t in range(n_lists)]


ctypedef fused stored_id_t:
    uint16_t
    uint32_t


def ids_with_separators(const out_id_t[::1] ids, const offset_t[::1] offsets, out_id_t separator,
                        stored_id_t[::1] out, const uint8_t[::1] ends=None):
    """Write text t's ids, ``ids[offsets[t]:offsets[t + 1]]``, then ``separator``
    (only where ``ends[t]``, if given: a text that ends its record), for each
    text in turn, into ``out`` (uint16 or uint32, which must hold every id, and
    exactly the ids and separators): a corpus of records as a token array,
    laid out without the GIL (numpy's ``insert``, then a cast, took a third of
    the time of encoding the records).

    >>> import numpy as np
    >>> out = np.empty(5, np.uint16)
    >>> ids_with_separators(np.array([7, 8, 9], np.uint32), np.array([0, 2, 3], np.int64), 0, out)
    >>> out.tolist()
    [7, 8, 0, 9, 0]
    """
    cdef Py_ssize_t n_texts = offsets.shape[0] - 1
    cdef Py_ssize_t t, k, at = 0, n_separators = n_texts
    check_offsets(offsets, -1, ids.shape[0], "id offsets")
    if ends is not None:
        if ends.shape[0] != n_texts:
            raise ValueError(f"ends has {ends.shape[0]} entries for {n_texts} texts")
        n_separators = 0
        for t in range(n_texts):
            n_separators += ends[t] != 0
    if n_texts < 0 or out.shape[0] != ids.shape[0] + n_separators:
        raise ValueError(f"out holds {out.shape[0]} ids, not {ids.shape[0]} ids and {n_separators} separators")
    with nogil:
        for t in range(n_texts):
            for k in range(offsets[t], offsets[t + 1]):
                out[at] = <stored_id_t>ids[k]
                at += 1
            if ends is None or ends[t]:
                out[at] = <stored_id_t>separator
                at += 1



def all_below(const out_id_t[::1] ids, out_id_t limit) -> bool:
    """Whether every id is below ``limit`` (numpy's ``max`` took 0.7 us on a
    short call's few ids).

    >>> import numpy as np
    >>> all_below(np.array([3, 9], np.uint32), 10), all_below(np.array([3, 10], np.uint32), 10)
    (True, False)
    """
    return ids_below(&ids[0] if ids.shape[0] else NULL, ids.shape[0], limit)


cdef bint ids_below(const out_id_t* ids, Py_ssize_t n, out_id_t limit) noexcept nogil:
    """``all_below`` of ``ids[:n]``, for the kernels."""
    cdef Py_ssize_t k
    for k in range(n):
        if ids[k] >= limit:
            return False
    return True


cdef class Expanding:
    """Ids from ``first`` on that stand for others: ``rows[id - first,
    :lengths[id - first]]``; and, when ``fused`` is an id, each run of it in
    a text kept as one. Checked once, and held for the kernel's calls
    (``ShortCalls.expanding``), which expand a text's ids as they make its
    list or array.

    Used by ``expand_ids``.
    """

    def __init__(self, out_id_t first, rows, lengths, int64_t fused=-1):
        rows = np.ascontiguousarray(rows, dtype=np.uint32)
        lengths = np.ascontiguousarray(lengths, dtype=np.uint8)
        if rows.ndim != 2 or lengths.ndim != 1 or lengths.shape[0] != rows.shape[0]:
            raise ValueError(f"{lengths.shape[0] if lengths.ndim == 1 else lengths.shape} lengths for "
                             f"{rows.shape[0] if rows.ndim == 2 else rows.shape} rows")
        cdef const out_id_t[:, ::1] row_view = rows
        cdef const uint8_t[::1] length_view = lengths
        cdef Py_ssize_t k
        for k in range(rows.shape[0]):
            if not 1 <= length_view[k] <= rows.shape[1]:
                raise ValueError(f"row {k} has {rows.shape[1]} ids, not {length_view[k]}")
        self.rows_array, self.lengths_array = rows, lengths
        self.e.first, self.e.fused = first, fused
        self.e.n_rows, self.e.width = rows.shape[0], rows.shape[1]
        self.e.rows = &row_view[0, 0] if rows.size else NULL
        self.e.lengths = &length_view[0] if lengths.shape[0] else NULL

    @property
    def first(self) -> int:
        return self.e.first

    cdef Py_ssize_t count_checked(self, const out_id_t* ids, Py_ssize_t n) except -1:
        """How many ids ``ids[:n]`` gives expanded; ValueError for an id that stands for no row."""
        cdef Py_ssize_t count = expand_run(&self.e, ids, n, NULL)
        cdef Py_ssize_t k
        if count < 0:
            for k in range(n):
                if ids[k] >= self.e.first and ids[k] - self.e.first >= self.e.n_rows:
                    raise ValueError(f"id {ids[k]} at {k} stands for no row: ids from {self.e.first} "
                                     f"have {self.e.n_rows}")
        return count


cdef Py_ssize_t expand_run(const Expansion* e, const out_id_t* ids, Py_ssize_t n, out_id_t* out) noexcept nogil:
    """How many ids one text's, ``ids[:n]``, gives expanded by ``e``; they are
    written to ``out`` unless it is NULL (then only counted). -1 for an id
    that stands for no row. ``out`` needs room for ``e.width`` ids an id."""
    cdef Py_ssize_t k, j, length, at = 0
    cdef const out_id_t* row
    cdef out_id_t token
    if e.fused < 0:
        # No runs to fuse (byte fallback): an id, or its row, in place.
        for k in range(n):
            token = ids[k]
            if token < e.first:
                if out != NULL:
                    out[at] = token
                at += 1
                continue
            if token - e.first >= <out_id_t>e.n_rows:
                return -1
            length = e.lengths[token - e.first]
            if out != NULL:
                row = e.rows + (token - e.first) * e.width
                for j in range(length):
                    out[at + j] = row[j]
            at += length
        return at
    cdef bint after = False            # an id was kept before, in this text
    cdef out_id_t last = 0
    for k in range(n):
        token = ids[k]
        if token < e.first:
            row, length = &ids[k], 1
        elif token - e.first >= <out_id_t>e.n_rows:
            return -1
        else:
            row, length = e.rows + (token - e.first) * e.width, e.lengths[token - e.first]
        for j in range(length):
            token = row[j]
            if not (after and token == last and <int64_t>token == e.fused):
                if out != NULL:
                    out[at] = token
                at += 1
            after, last = True, token
    return at


def expand_ids(const out_id_t[::1] ids, const offset_t[::1] offsets, Expanding expanding not None):
    """``(ids, offsets)`` expanded: each id that stands for others replaced by
    them, and each run of the fused id in a text kept as one (``Expanding``):
    text t's ids are ``ids[offsets[t]:offsets[t + 1]]`` in and out. A pass to
    count (and check) and one to write, without the GIL: the same in numpy, a
    dozen passes over every id, took longer than encoding the text.

    >>> import numpy as np
    >>> rows, lengths = np.array([[7, 8], [9, 0]], np.uint32), np.array([2, 1], np.uint8)
    >>> ids, offsets = expand_ids(np.array([1, 5, 6, 6], np.uint32), np.array([0, 2, 4], np.int64),
    ...                           Expanding(5, rows, lengths))
    >>> ids.tolist(), offsets.tolist()
    ([1, 7, 8, 9, 9], [0, 3, 5])
    >>> ids, offsets = expand_ids(np.array([0, 0, 3, 0, 0], np.uint32), np.array([0, 4, 5], np.int64),
    ...                           Expanding(5, rows, lengths, fused=0))
    >>> ids.tolist(), offsets.tolist()
    ([0, 3, 0, 0], [0, 3, 4])
    """
    cdef Py_ssize_t n_texts = offsets.shape[0] - 1
    cdef Py_ssize_t t, size = 0
    check_offsets(offsets, -1, ids.shape[0], "id offsets")
    if n_texts < 0:
        raise ValueError("id offsets are empty: they hold a start for each text, then the end")
    cdef const out_id_t* data = &ids[0] if ids.shape[0] else NULL
    new_offsets = np.empty(n_texts + 1, dtype=np.int64)
    cdef offset_t[::1] bounds = new_offsets
    cdef Py_ssize_t count = 0
    with nogil:
        bounds[0] = 0
        for t in range(n_texts):
            count = expand_run(&expanding.e, data + offsets[t], offsets[t + 1] - offsets[t], NULL)
            if count < 0:
                break
            size += count
            bounds[t + 1] = size
    if count < 0:
        expanding.count_checked(data, ids.shape[0])         # raises, naming the id
    out = np.empty(size, dtype=np.uint32)
    if size == 0:
        return out, new_offsets
    cdef out_id_t[::1] written = out
    with nogil:
        for t in range(n_texts):
            expand_run(&expanding.e, data + offsets[t], offsets[t + 1] - offsets[t], &written[0] + bounds[t])
    return out, new_offsets
