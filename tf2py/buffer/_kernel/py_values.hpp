// Converting Python values for the kernel, and handing its errors back: part of the
// binding (binding.cpp includes it once, inside its anonymous namespace).
#pragma once

constexpr int kNameType = -7;  // a frame id that is not a str (batch rows)
// tf2k::kNotSimple: an argument that is not a plain str / int / float; Python checks it
// (and names the problem) on its slow path.

// A float or int argument as a double; false for anything else (arrays, strings...).
bool plain_double(nb::handle h, double& out) {
    PyObject* o = h.ptr();
    if (PyFloat_Check(o)) {
        out = PyFloat_AS_DOUBLE(o);
        return true;
    }
    if (PyLong_Check(o)) {
        out = PyLong_AsDouble(o);
        if (out == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return false;
        }
        return true;
    }
    return false;
}

bool plain_int64(nb::handle h, int64_t& out) {
    PyObject* o = h.ptr();
    if (!PyLong_Check(o)) return false;
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return false;
    }
    out = static_cast<int64_t>(v);
    return true;
}

using Int64Array = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using RowsArray = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using SecondsArray = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using CodesArray = nb::ndarray<int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// A str's UTF-8 bytes without a copy into a std::string where possible.
bool str_view(PyObject* o, std::string& out) {
    if (!PyUnicode_Check(o)) return false;
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(o, &size);
    if (!data) {
        PyErr_Clear();  // a str with lone surrogates: not a usable frame id
        return false;
    }
    out.assign(data, static_cast<size_t>(size));
    return true;
}

PyObject* g_kernel_error = nullptr;  // KernelError: args = the error tuple (see raise_error)

nb::object frame_name(const Kernel& k, int32_t id) {
    if (id < 0 || static_cast<size_t>(id) >= k.frame_count()) return nb::none();
    return nb::str(k.name(id).c_str());
}

// (code, argument, kind, time, stamp, source name, target name, failed index)
nb::tuple error_tuple(const Kernel& k, const Error& e, size_t failed) {
    return nb::make_tuple(static_cast<int>(e.code), e.argument, static_cast<int>(e.kind), e.time, e.stamp,
                          frame_name(k, e.source), frame_name(k, e.target), failed);
}

// A query that failed raises KernelError(*error_tuple): no error state is kept between
// calls, so concurrent threads never see each other's errors.
[[noreturn]] void raise_error(const Kernel& k, const Error& e, size_t failed = 0) {
    nb::tuple t = error_tuple(k, e, failed);
    PyErr_SetObject(g_kernel_error, t.ptr());
    throw nb::python_error();
}
