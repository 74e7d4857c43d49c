/* Lists of ids made fast (bpe/_lists.pyx): a list whose item array is not
 * zeroed first, and whether reference counts are plain counts. */
#ifndef BPE_LISTS_H
#define BPE_LISTS_H

#include <Python.h>

/* A list with room for n items, their array allocated but not zeroed, and
   of size 0 until its caller has written every item and calls
   bpe_list_filled. PyList_New(n) zeroes the array (calloc): under the
   GIL, 8 bytes an id, only for each slot to be written straight after.
   Until it is filled the list is a valid empty one, so freeing it on an
   error frees the array and reads no item. The array is the list's own,
   from the allocator list_dealloc frees it with; free-threaded builds
   allocate item arrays their own way, so there it is PyList_New's. */
static PyObject* bpe_list_unfilled(Py_ssize_t n, PyObject*** items) {
    PyObject* list;
#ifdef Py_GIL_DISABLED
    list = PyList_New(n);
    if (list == NULL)
        return NULL;
    Py_SET_SIZE(list, 0);
#else
    PyObject** array;
    if (n > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(PyObject*))
        return PyErr_NoMemory();
    list = PyList_New(0);
    if (list == NULL || n == 0) {
        *items = NULL;
        return list;
    }
    array = (PyObject**)PyMem_Malloc(n * sizeof(PyObject*));
    if (array == NULL) {
        Py_DECREF(list);
        return PyErr_NoMemory();
    }
    ((PyListObject*)list)->ob_item = array;
    ((PyListObject*)list)->allocated = n;
#endif
    *items = ((PyListObject*)list)->ob_item;
    return list;
}
static void bpe_list_filled(PyObject* list, Py_ssize_t n) { Py_SET_SIZE(list, n); }

/* Where a reference count is a plain count, decremented to zero to free:
   CPython before 3.12, with the GIL. 3.12 made some objects immortal in
   its own way (a count Py_INCREF leaves alone), and free-threaded builds
   split the count in two; there every reference is counted. */
#if PY_VERSION_HEX < 0x030C0000 && !defined(Py_GIL_DISABLED)
#define BPE_PLAIN_REFCOUNT 1
#else
#define BPE_PLAIN_REFCOUNT 0
#endif

#endif
