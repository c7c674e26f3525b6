// tf2py's message classes read and built through their __slots__: part of the binding
// (binding.cpp includes it once, inside its anonymous namespace).
#pragma once

// ---- messages built in one step ---------------------------------------------------------
// tf2py's message classes use __slots__; a slot is a PyObject* at a fixed offset, given by
// its member descriptor. A lookup's TransformStamped is allocated and filled directly (no
// __init__, no attribute lookups), which is what makes the contract's call the fast one.

struct Slots {
    PyTypeObject* type = nullptr;
    Py_ssize_t offset[4] = {0, 0, 0, 0};
};

struct MessageTypes {
    Slots time, header, vector3, quaternion, transform, stamped;
    bool ready = false;
} g_types;

Slots slots_of(nb::handle cls, std::initializer_list<const char*> names) {
    if (!PyType_Check(cls.ptr())) throw nb::type_error("a message class is needed");
    Slots out;
    out.type = reinterpret_cast<PyTypeObject*>(cls.ptr());
    int k = 0;
    for (const char* name : names) {
        nb::object d = nb::steal(PyObject_GetAttrString(cls.ptr(), name));
        if (!d.is_valid()) throw nb::python_error();
        if (Py_TYPE(d.ptr()) != &PyMemberDescr_Type) throw nb::type_error("message fields must be __slots__");
        PyMemberDef* member = reinterpret_cast<PyMemberDescrObject*>(d.ptr())->d_member;
        if (member->type != T_OBJECT_EX) throw nb::type_error("message fields must be object slots");
        out.offset[k++] = member->offset;
    }
    return out;
}

void set_message_types(nb::handle time, nb::handle header, nb::handle vector3, nb::handle quaternion,
                       nb::handle transform, nb::handle stamped) {
    MessageTypes t;
    t.time = slots_of(time, {"_ns"});
    t.header = slots_of(header, {"stamp", "frame_id"});
    t.vector3 = slots_of(vector3, {"x", "y", "z"});
    t.quaternion = slots_of(quaternion, {"x", "y", "z", "w"});
    t.transform = slots_of(transform, {"translation", "rotation"});
    t.stamped = slots_of(stamped, {"header", "child_frame_id", "transform"});
    for (PyTypeObject* type : {t.time.type, t.header.type, t.vector3.type, t.quaternion.type, t.transform.type,
                               t.stamped.type})
        Py_INCREF(type);  // kept for the life of the process
    t.ready = true;
    g_types = t;
}

// A new instance of a slots class with its fields (references stolen; nullptr on failure,
// with the references released).
PyObject* make(const Slots& s, std::initializer_list<PyObject*> fields) {
    PyObject* o = nullptr;
    bool ok = true;
    for (PyObject* f : fields) ok = ok && f != nullptr;
    if (ok) o = s.type->tp_alloc(s.type, 0);
    int k = 0;
    for (PyObject* f : fields) {
        if (o) {
            *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + s.offset[k]) = f;
        } else {
            Py_XDECREF(f);
        }
        ++k;
    }
    return o;
}

PyObject* slot(PyObject* o, Py_ssize_t offset) { return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + offset); }

// The TransformStamped of a lookup; stamp_obj (borrowed) is reused when it is that Time.
nb::object build_stamped(PyObject* target, PyObject* source, const Pose& p, int64_t used, PyObject* time) {
    const MessageTypes& t = g_types;
    PyObject* stamp = nullptr;
    if (Py_TYPE(time) == t.time.type) {
        PyObject* ns = slot(time, t.time.offset[0]);
        if (ns && PyLong_CheckExact(ns)) {
            int overflow = 0;
            const long long v = PyLong_AsLongLongAndOverflow(ns, &overflow);
            if (!overflow && v == used) {
                Py_INCREF(time);
                stamp = time;
            }
        }
    }
    if (!stamp) stamp = make(t.time, {PyLong_FromLongLong(used)});
    Py_INCREF(target);
    PyObject* header = make(t.header, {stamp, target});
    PyObject* translation =
        make(t.vector3, {PyFloat_FromDouble(p.t[0]), PyFloat_FromDouble(p.t[1]), PyFloat_FromDouble(p.t[2])});
    PyObject* rotation = make(t.quaternion, {PyFloat_FromDouble(p.q[0]), PyFloat_FromDouble(p.q[1]),
                                             PyFloat_FromDouble(p.q[2]), PyFloat_FromDouble(p.q[3])});
    PyObject* transform = make(t.transform, {translation, rotation});
    Py_INCREF(source);
    PyObject* out = make(t.stamped, {header, source, transform});
    if (!out) throw nb::python_error();
    return nb::steal(out);
}

// Nanoseconds of a time argument on the fast path: a tf2py Time, or plain float / int
// seconds (rounded to the nearest ns, half to even, as Python's round()); false for
// anything else or a time beyond int64 (Python then converts it, and names it).
bool fast_time_ns(PyObject* o, int64_t& out) {
    if (Py_TYPE(o) == g_types.time.type) {
        PyObject* ns = slot(o, g_types.time.offset[0]);
        if (!ns || !PyLong_CheckExact(ns)) return false;
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(ns, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return false;
        }
        out = v;
        return true;
    }
    if (PyFloat_Check(o)) {  // float or a subclass (numpy.float64)
        const double ns = std::nearbyint(PyFloat_AS_DOUBLE(o) * 1e9);
        if (!(ns > -9.2e18 && ns < 9.2e18)) return false;
        out = static_cast<int64_t>(ns);
        return true;
    }
    if (PyLong_CheckExact(o)) {
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return false;
        }
        if (v > 9'000'000'000LL || v < -9'000'000'000LL) return false;
        out = static_cast<int64_t>(v) * 1'000'000'000LL;
        return true;
    }
    return false;
}

// The fields of a TransformStamped of tf2py's own classes with plain values: parent and
// child ids, stamp (ns) and the 7 numbers; false for anything else (Python reads it then).
bool read_transform(PyObject* msg, std::string& parent, std::string& child, int64_t& stamp, double* v) {
    const MessageTypes& t = g_types;
    if (!t.ready || Py_TYPE(msg) != t.stamped.type) return false;
    PyObject* header = slot(msg, t.stamped.offset[0]);
    PyObject* child_id = slot(msg, t.stamped.offset[1]);
    PyObject* transform = slot(msg, t.stamped.offset[2]);
    if (!header || !child_id || !transform || Py_TYPE(header) != t.header.type ||
        Py_TYPE(transform) != t.transform.type)
        return false;
    PyObject* time = slot(header, t.header.offset[0]);
    PyObject* frame_id = slot(header, t.header.offset[1]);
    PyObject* translation = slot(transform, t.transform.offset[0]);
    PyObject* rotation = slot(transform, t.transform.offset[1]);
    if (!time || !frame_id || !translation || !rotation || Py_TYPE(translation) != t.vector3.type ||
        Py_TYPE(rotation) != t.quaternion.type)
        return false;
    if (!PyUnicode_CheckExact(frame_id) || !PyUnicode_CheckExact(child_id) || !str_view(frame_id, parent) ||
        !str_view(child_id, child) || !fast_time_ns(time, stamp))
        return false;
    for (int k = 0; k < 3; ++k) {
        PyObject* f = slot(translation, t.vector3.offset[k]);
        if (!f || !plain_double(f, v[k])) return false;
    }
    for (int k = 0; k < 4; ++k) {
        PyObject* f = slot(rotation, t.quaternion.offset[k]);
        if (!f || !plain_double(f, v[3 + k])) return false;
    }
    return true;
}

PyObject* g_notify_name = nullptr;  // "_notify_new_data"
PyObject* g_notify_noop = nullptr;  // BufferCore._notify_new_data (nothing to call)

void set_notify_noop(nb::handle function) {
    Py_XDECREF(g_notify_noop);
    g_notify_noop = function.inc_ref().ptr();
}

// True when a timeout asks for no wait (None, 0, 0.0, a zero Duration).
bool no_wait(nb::handle timeout) {
    if (timeout.is_none()) return true;
    const int truth = PyObject_IsTrue(timeout.ptr());
    if (truth < 0) throw nb::python_error();
    return truth == 0;
}

nb::tuple pose_tuple(const Pose& p, int64_t used) {
    return nb::make_tuple(p.t[0], p.t[1], p.t[2], p.q[0], p.q[1], p.q[2], p.q[3], used);
}
