// A store's public entries as methods of its class: BufferCore.lookup_transform,
// can_transform and set_transform, and Buffer's waiting lookup_transform and can_transform,
// are StoreMethod objects, method descriptors whose call reads the store's kernel (its
// `_kernel` slot) and runs py_entry.hpp's function with no Python frame and no second
// dispatch. Python makes one with store_method(function, entry) from the method it replaces,
// whose signature and docstring it keeps (in the object's __dict__), so inspect and help read
// them. Part of the binding (binding.cpp includes it once, inside its anonymous namespace,
// after py_entry.hpp).
#pragma once

enum class Entry : int { kLookup, kLookupWaiting, kCan, kCanWaiting, kSet };

struct StoreMethod {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject* dict;  // __signature__, __doc__, __name__, __qualname__, __wrapped__
    Entry entry;
};

// Where a store keeps its kernel: BufferCore's `_kernel` slot (its member descriptor, found by
// configure(); read through CPython's member API) and the class that declares it.
struct StoreLayout {
    PyTypeObject* store = nullptr;
    PyMemberDef* kernel = nullptr;
    PyTypeObject* kernel_type = nullptr;
} g_store;

// The layout of the store class `store` (checked; nothing is set here).
StoreLayout store_layout(nb::handle store) {
    if (!PyType_Check(store.ptr())) throw nb::type_error("configure: store must be a class");
    nb::object d = nb::steal(PyObject_GetAttrString(store.ptr(), "_kernel"));
    if (!d.is_valid()) throw nb::python_error();
    if (Py_TYPE(d.ptr()) != &PyMemberDescr_Type) throw nb::type_error("configure: the store's _kernel must be a slot");
    StoreLayout out;
    out.store = reinterpret_cast<PyTypeObject*>(store.ptr());
    out.kernel = reinterpret_cast<PyMemberDescrObject*>(d.ptr())->d_member;
    if (out.kernel->type != T_OBJECT_EX) throw nb::type_error("configure: the store's _kernel must be an object slot");
    out.kernel_type = reinterpret_cast<PyTypeObject*>(nb::type<PyKernel>().ptr());
    return out;
}

void set_store_layout(const StoreLayout& layout) {
    Py_INCREF(reinterpret_cast<PyObject*>(layout.store));  // kept for the life of the process
    g_store = layout;
}

// The entry's parameters after self, in order; how many must be given.
struct EntryParams {
    const char* names[3];
    int count, required;
};

const EntryParams& params_of(Entry e) {
    static const EntryParams lookup{{"target_frame", "source_frame", "time"}, 3, 3};
    static const EntryParams waiting{{"target_frame", "source_frame", "time"}, 3, 3};  // + timeout
    static const EntryParams set{{"transform", "authority", "is_static"}, 3, 2};
    switch (e) {
        case Entry::kSet: return set;
        case Entry::kLookupWaiting:
        case Entry::kCanWaiting: return waiting;
        default: return lookup;
    }
}

bool takes_timeout(Entry e) { return e == Entry::kLookupWaiting || e == Entry::kCanWaiting; }

// The arguments after self into out[0..3] (borrowed; nullptr where not given); false with a
// TypeError set for a wrong count or an unknown or repeated keyword.
bool gather(const StoreMethod* m, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, PyObject** out) {
    const EntryParams& p = params_of(m->entry);
    const int most = p.count + (takes_timeout(m->entry) ? 1 : 0);
    static const char* const kTimeout = "timeout";
    for (int k = 0; k < 4; ++k) out[k] = nullptr;
    if (!kwnames && nargs >= p.required && nargs <= most) {  // the common call: positions only
        for (Py_ssize_t k = 0; k < nargs; ++k) out[k] = args[k];
        return true;
    }
    if (nargs > most) {
        PyErr_Format(PyExc_TypeError, "takes at most %d arguments after self (%zd given)", most, nargs);
        return false;
    }
    for (Py_ssize_t k = 0; k < nargs; ++k) out[k] = args[k];
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < nkw; ++j) {
        PyObject* key = PyTuple_GET_ITEM(kwnames, j);
        int slot = -1;
        for (int k = 0; k < most && slot < 0; ++k) {
            const char* name = k < p.count ? p.names[k] : kTimeout;
            if (PyUnicode_CompareWithASCIIString(key, name) == 0) slot = k;
        }
        if (slot < 0 || out[slot]) {
            PyErr_Format(PyExc_TypeError, slot < 0 ? "got an unexpected keyword argument '%U'"
                                                   : "got multiple values for argument '%U'", key);
            return false;
        }
        out[slot] = args[nargs + j];
    }
    for (int k = 0; k < p.required; ++k) {
        if (!out[k]) {
            PyErr_Format(PyExc_TypeError, "missing required argument '%s'", p.names[k]);
            return false;
        }
    }
    return true;
}

// A C++ exception of the entry as the Python exception it stands for.
void raise_as_python() {
    try {
        throw;
    } catch (nb::python_error& e) {
        e.restore();
    } catch (const nb::builtin_exception& e) {
        PyErr_SetString(e.type() == nb::exception_type::type_error    ? PyExc_TypeError
                        : e.type() == nb::exception_type::value_error ? PyExc_ValueError
                                                                      : PyExc_RuntimeError,
                        e.what());
    } catch (const std::bad_alloc&) {
        PyErr_NoMemory();
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    }
}

PyObject* store_method_call(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
    const StoreMethod* m = reinterpret_cast<const StoreMethod*>(callable);
    const Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "a store method needs its store");
        return nullptr;
    }
    PyObject* a[4];
    if (!gather(m, args + 1, nargs - 1, kwnames, a)) return nullptr;
    // The store's kernel: its `_kernel` slot, read through CPython's member API.
    nb::object kernel;
    if (g_store.store && PyObject_TypeCheck(args[0], g_store.store))
        kernel = nb::steal(PyMember_GetOne(reinterpret_cast<const char*>(args[0]), g_store.kernel));
    if (!kernel.is_valid() || Py_TYPE(kernel.ptr()) != g_store.kernel_type) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s needs a BufferCore, got %s", m->entry == Entry::kSet ? "set_transform"
                     : m->entry == Entry::kCan || m->entry == Entry::kCanWaiting ? "can_transform" : "lookup_transform",
                     Py_TYPE(args[0])->tp_name);
        return nullptr;
    }
    try {
        EntryBinding::Self self;
        self.p = nb::inst_ptr<PyKernel>(kernel);
        self.h = kernel;
        nb::handle timeout = a[3] ? nb::handle(a[3]) : nb::none();
        nb::object result;
        switch (m->entry) {
            case Entry::kLookup: result = EntryBinding::lookup(self, a[0], a[1], a[2], nb::none()); break;
            case Entry::kLookupWaiting: result = EntryBinding::lookup(self, a[0], a[1], a[2], timeout); break;
            case Entry::kCan: result = EntryBinding::can(self, a[0], a[1], a[2], nb::none()); break;
            case Entry::kCanWaiting: result = EntryBinding::can(self, a[0], a[1], a[2], timeout); break;
            case Entry::kSet:
                result = EntryBinding::set_transform(self, a[0], a[1], a[2] ? nb::handle(a[2]) : nb::handle(Py_False));
                break;
        }
        return result.release().ptr();
    } catch (...) {
        raise_as_python();
        return nullptr;
    }
}

PyObject* store_method_get(PyObject* self, PyObject* obj, PyObject*) {
    if (!obj || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

void store_method_dealloc(PyObject* self) {
    Py_XDECREF(reinterpret_cast<StoreMethod*>(self)->dict);
    Py_TYPE(self)->tp_free(self);
}

PyTypeObject* store_method_type() {
    static PyTypeObject type;  // zero-initialised (static storage), filled once below
    if (!type.tp_name) {
        Py_SET_REFCNT(reinterpret_cast<PyObject*>(&type), 1);
        type.tp_name = "tf2py.buffer._kernel_ext.StoreMethod";
        type.tp_basicsize = sizeof(StoreMethod);
        type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR;
        type.tp_doc = "A store's public entry, run by the kernel (see tf2py/buffer/kernel.py).";
        type.tp_vectorcall_offset = offsetof(StoreMethod, vectorcall);
        type.tp_call = PyVectorcall_Call;
        type.tp_descr_get = store_method_get;
        type.tp_dictoffset = offsetof(StoreMethod, dict);
        type.tp_getattro = PyObject_GenericGetAttr;
        type.tp_setattro = PyObject_GenericSetAttr;
        type.tp_dealloc = store_method_dealloc;
    }
    return &type;
}

// store_method(entry): a new StoreMethod running the kernel's `entry` ("lookup_transform",
// "lookup_transform_waiting", "can_transform", "can_transform_waiting" or "set_transform").
nb::object store_method(const std::string& entry) {
    static const std::pair<const char*, Entry> kEntries[] = {
        {"lookup_transform", Entry::kLookup}, {"lookup_transform_waiting", Entry::kLookupWaiting},
        {"can_transform", Entry::kCan},       {"can_transform_waiting", Entry::kCanWaiting},
        {"set_transform", Entry::kSet}};
    for (const auto& [name, e] : kEntries) {
        if (entry != name) continue;
        StoreMethod* m = PyObject_New(StoreMethod, store_method_type());
        if (!m) throw nb::python_error();
        m->vectorcall = store_method_call;
        m->dict = nullptr;
        m->entry = e;
        return nb::steal(reinterpret_cast<PyObject*>(m));
    }
    throw nb::value_error("store_method: no such entry");
}

void bind_store_methods(nb::module_& m) {
    if (PyType_Ready(store_method_type()) < 0) throw nb::python_error();
    m.attr("StoreMethod") = nb::handle(reinterpret_cast<PyObject*>(store_method_type()));
    m.def("store_method", &store_method, "entry"_a,
          "A method descriptor for a store's class that runs the kernel's entry `entry` on the\n"
          "store's kernel (tf2py/buffer/kernel.py's make_store_methods).");
}
