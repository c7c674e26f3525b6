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

// A str's UTF-8 bytes, without a copy: valid while the str lives (the caller holds it).
bool str_view(PyObject* o, std::string_view& out) {
    if (!PyUnicode_Check(o)) return false;
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(o, &size);
    if (!data) {
        PyErr_Clear();  // a str with lone surrogates: not a usable frame id
        return false;
    }
    out = std::string_view(data, static_cast<size_t>(size));
    return true;
}

bool str_view(PyObject* o, std::string& out) {
    std::string_view view;
    if (!str_view(o, view)) return false;
    out.assign(view);
    return true;
}

// The same for an exact str only (the fast paths: no subclass with its own __eq__).
bool exact_str(PyObject* o, std::string_view& out) { return PyUnicode_CheckExact(o) && str_view(o, out); }

PyObject* g_kernel_error = nullptr;  // KernelError: args = ErrorRecord::tuple()

// An error with its frames' names copied, taken inside an Access scope and turned into the
// tuple after it (building Python objects may run Python code: never inside the scope).
struct ErrorRecord {
    Error e;
    std::string source, target;
    bool has_source = false, has_target = false;
    size_t failed = 0;

    ErrorRecord() = default;
    ErrorRecord(const Kernel& k, const Error& error, size_t failed_index = 0) : e(error), failed(failed_index) {
        has_source = e.source >= 0 && static_cast<size_t>(e.source) < k.frame_count();
        has_target = e.target >= 0 && static_cast<size_t>(e.target) < k.frame_count();
        if (has_source) source = k.name(e.source);
        if (has_target) target = k.name(e.target);
    }

    bool failed_query() const { return e.code != ErrorCode::None; }

    nb::tuple tuple() const {
        nb::object s = has_source ? nb::object(nb::str(source.data(), source.size())) : nb::none();
        nb::object t = has_target ? nb::object(nb::str(target.data(), target.size())) : nb::none();
        return nb::make_tuple(static_cast<int>(e.code), e.argument, static_cast<int>(e.kind), e.time, e.stamp, s, t,
                              failed);
    }

    [[noreturn]] void raise() const {
        nb::tuple t = tuple();
        PyErr_SetObject(g_kernel_error, t.ptr());
        throw nb::python_error();
    }
};

// A Frame error for argument `argument` (0 target, 1 source, 2 fixed) that names no frame.
Error frame_error(int argument) {
    Error e;
    e.code = ErrorCode::Frame;
    e.argument = argument;
    e.source = e.target = -1;
    return e;
}
