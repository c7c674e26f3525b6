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

// Field names, interned once (for objects of other classes, read by attribute).
struct MessageNames {
    PyObject *header, *child_frame_id, *transform, *stamp, *frame_id, *translation, *rotation, *sec, *nanosec;
    PyObject* xyzw[4];
} g_names;

void intern_names() {
    MessageNames& n = g_names;
    n.header = PyUnicode_InternFromString("header");
    n.child_frame_id = PyUnicode_InternFromString("child_frame_id");
    n.transform = PyUnicode_InternFromString("transform");
    n.stamp = PyUnicode_InternFromString("stamp");
    n.frame_id = PyUnicode_InternFromString("frame_id");
    n.translation = PyUnicode_InternFromString("translation");
    n.rotation = PyUnicode_InternFromString("rotation");
    n.sec = PyUnicode_InternFromString("sec");
    n.nanosec = PyUnicode_InternFromString("nanosec");
    const char* xyzw[4] = {"x", "y", "z", "w"};
    for (int k = 0; k < 4; ++k) n.xyzw[k] = PyUnicode_InternFromString(xyzw[k]);
}

void set_message_types(nb::handle time, nb::handle header, nb::handle vector3, nb::handle quaternion,
                       nb::handle transform, nb::handle stamped) {
    MessageTypes t;
    t.time = slots_of(time, {"nanoseconds"});
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

// Nanoseconds of a message's stamp: as fast_time_ns, or any object with int `sec` and
// `nanosec` (builtin_interfaces' Time, as rclpy's messages carry).
bool stamp_ns(PyObject* o, int64_t& out) {
    if (fast_time_ns(o, out)) return true;
    if (PyErr_Occurred()) return false;
    nb::object sec = nb::steal(PyObject_GetAttr(o, g_names.sec));
    nb::object nanosec = nb::steal(sec.is_valid() ? PyObject_GetAttr(o, g_names.nanosec) : nullptr);
    int64_t s = 0, n = 0;
    if (!sec.is_valid() || !nanosec.is_valid() || !PyLong_CheckExact(sec.ptr()) || !PyLong_CheckExact(nanosec.ptr()) ||
        !plain_int64(sec, s) || !plain_int64(nanosec, n) || s > 9'000'000'000LL || s < -9'000'000'000LL ||
        n > 9'000'000'000LL || n < -9'000'000'000LL) {
        PyErr_Clear();
        return false;
    }
    out = s * 1'000'000'000LL + n;
    return true;
}

// A field of a message: the slot of tf2py's class, else the attribute of any other object
// (a new reference either way; nullptr, with no error set, when missing).
PyObject* field(PyObject* o, const Slots& s, int k, PyObject* name) {
    if (Py_TYPE(o) == s.type) {
        PyObject* f = slot(o, s.offset[k]);
        Py_XINCREF(f);
        return f;
    }
    PyObject* f = PyObject_GetAttr(o, name);
    if (!f) PyErr_Clear();
    return f;
}

// The fields of a TransformStamped with plain values, of tf2py's classes (read through their
// slots) or of any object of that shape (rclpy's geometry_msgs; read by attribute): parent
// and child ids (exact str), stamp (ns) and the 7 numbers; false for anything else (Python
// reads it then, and names what is wrong). `keep` holds the name objects the views point into.
bool read_transform(PyObject* msg, std::string_view& parent, std::string_view& child, int64_t& stamp, double* v,
                    nb::object keep[2]) {
    const MessageTypes& t = g_types;
    if (!t.ready) return false;
    const MessageNames& n = g_names;
    nb::object header = nb::steal(field(msg, t.stamped, 0, n.header));
    nb::object child_id = nb::steal(field(msg, t.stamped, 1, n.child_frame_id));
    nb::object transform = nb::steal(field(msg, t.stamped, 2, n.transform));
    if (!header.is_valid() || !child_id.is_valid() || !transform.is_valid()) return false;
    nb::object time = nb::steal(field(header.ptr(), t.header, 0, n.stamp));
    nb::object frame_id = nb::steal(field(header.ptr(), t.header, 1, n.frame_id));
    nb::object translation = nb::steal(field(transform.ptr(), t.transform, 0, n.translation));
    nb::object rotation = nb::steal(field(transform.ptr(), t.transform, 1, n.rotation));
    if (!time.is_valid() || !frame_id.is_valid() || !translation.is_valid() || !rotation.is_valid()) return false;
    if (!exact_str(frame_id.ptr(), parent) || !exact_str(child_id.ptr(), child) || !stamp_ns(time.ptr(), stamp))
        return false;
    for (int k = 0; k < 3; ++k) {
        nb::object f = nb::steal(field(translation.ptr(), t.vector3, k, n.xyzw[k]));
        if (!f.is_valid() || !plain_double(f, v[k])) return false;
    }
    for (int k = 0; k < 4; ++k) {
        nb::object f = nb::steal(field(rotation.ptr(), t.quaternion, k, n.xyzw[k]));
        if (!f.is_valid() || !plain_double(f, v[3 + k])) return false;
    }
    keep[0] = std::move(frame_id);
    keep[1] = std::move(child_id);
    return true;
}

nb::tuple pose_tuple(const Pose& p, int64_t used) {
    return nb::make_tuple(p.t[0], p.t[1], p.t[2], p.q[0], p.q[1], p.q[2], p.q[3], used);
}
