// Messages built in C++: make_transform's common form. Part of the binding (binding.cpp
// includes it once, inside its anonymous namespace, after py_messages.hpp).
#pragma once

// n plain numbers of a tuple or list as float objects (new references in out, as float(v)
// makes them); false for anything else, nothing held then.
bool floats_of(PyObject* seq, Py_ssize_t n, PyObject** out) {
    if ((!PyTuple_CheckExact(seq) && !PyList_CheckExact(seq)) || PySequence_Fast_GET_SIZE(seq) != n) return false;
    PyObject** items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t k = 0; k < n; ++k) {
        double v = 0.0;
        PyObject* item = items[k];
        if (PyFloat_CheckExact(item)) {
            Py_INCREF(item);
            out[k] = item;
            continue;
        }
        if (!plain_double(item, v) || !(out[k] = PyFloat_FromDouble(v))) {
            PyErr_Clear();
            for (Py_ssize_t j = 0; j < k; ++j) Py_DECREF(out[j]);
            return false;
        }
    }
    return true;
}

// make_transform(parent, child, translation, rotation, stamp) for plain arguments (tuples or
// lists of numbers, a Time or seconds): the TransformStamped built through the slots; None
// for anything else (Python checks it, converts it and names what is wrong).
nb::object build_transform(nb::handle parent, nb::handle child, nb::handle translation, nb::handle rotation,
                           nb::handle stamp) {
    const MessageTypes& t = g_types;
    if (!t.ready) return nb::none();
    PyObject* xyz[3];
    PyObject* q[4];
    if (!floats_of(translation.ptr(), 3, xyz)) return nb::none();
    if (!floats_of(rotation.ptr(), 4, q)) {
        for (PyObject* o : xyz) Py_DECREF(o);
        return nb::none();
    }
    PyObject* time = nullptr;
    int64_t ns = 0;
    if (Py_TYPE(stamp.ptr()) == t.time.type) {
        time = stamp.inc_ref().ptr();
    } else if (fast_time_ns(stamp.ptr(), ns)) {
        time = make(t.time, {PyLong_FromLongLong(ns)});
    }
    if (!time) {
        PyErr_Clear();
        for (PyObject* o : xyz) Py_DECREF(o);
        for (PyObject* o : q) Py_DECREF(o);
        return nb::none();
    }
    PyObject* header = make(t.header, {time, parent.inc_ref().ptr()});
    PyObject* vector = make(t.vector3, {xyz[0], xyz[1], xyz[2]});
    PyObject* rotation_msg = make(t.quaternion, {q[0], q[1], q[2], q[3]});
    PyObject* transform = make(t.transform, {vector, rotation_msg});
    PyObject* out = make(t.stamped, {header, child.inc_ref().ptr(), transform});
    if (!out) throw nb::python_error();
    return nb::steal(out);
}
