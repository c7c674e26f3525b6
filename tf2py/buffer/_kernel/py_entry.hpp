// The contract's lookup_transform, can_transform and set_transform themselves. A store
// (BufferCore, Buffer) binds these methods of its kernel as its own public methods, so a
// lookup or an insert that succeeds runs no Python frame at all (through a Python method
// around the kernel's call, a depth-3 lookup took 5 921 instructions against 4 871). What
// they do not do themselves (an error to word, arguments to convert, a wait, requests to
// re-check) goes to the fallbacks Python registered with configure(), called with the
// kernel's owner (the store, held weakly): Python keeps that policy and says, through the
// kernel's insert mode, when it must see an insert; the kernel calls nothing of Python's by
// name. Part of the binding (binding.cpp includes it once, inside its anonymous namespace,
// after PyKernel and the inserts).
#pragma once

// What Python registered with configure() (binding.cpp): called with the kernel's owner.
struct Fallbacks {
    PyObject* lookup = nullptr;        // (store, target, source, time, timeout, record)
    PyObject* can = nullptr;           // (store, target, source, time, timeout)
    PyObject* insert_slow = nullptr;   // (store, transform, authority, is_static) -> bool
    PyObject* insert_after = nullptr;  // (store, transform, stored) after a kernel insert
} g_fallbacks;

void set_fallbacks(nb::handle lookup, nb::handle can, nb::handle slow, nb::handle after) {
    for (nb::handle f : {lookup, can, slow, after})
        if (!PyCallable_Check(f.ptr())) throw nb::type_error("configure: the fallbacks must be callables");
    Fallbacks& g = g_fallbacks;
    for (PyObject* old : {g.lookup, g.can, g.insert_slow, g.insert_after}) Py_XDECREF(old);
    g.lookup = lookup.inc_ref().ptr();
    g.can = can.inc_ref().ptr();
    g.insert_slow = slow.inc_ref().ptr();
    g.insert_after = after.inc_ref().ptr();
}

struct EntryBinding {
    using Self = nb::pointer_and_handle<PyKernel>;

    // No wait asked: the timeout left out, None, or an exact int or float zero (anything else,
    // a Duration included, is Python's to read).
    static bool no_wait(nb::handle timeout) {
        PyObject* o = timeout.ptr();
        if (o == Py_None) return true;
        if (PyFloat_CheckExact(o)) return PyFloat_AS_DOUBLE(o) == 0.0;
        if (PyLong_CheckExact(o)) {
            int overflow = 0;
            return PyLong_AsLongLongAndOverflow(o, &overflow) == 0 && !overflow;
        }
        return false;
    }

    static nb::object lookup_fallback(Self self, nb::handle target, nb::handle source, nb::handle time,
                                      nb::handle timeout, nb::handle record) {
        if (!g_fallbacks.lookup) throw nb::type_error("lookup_transform: the kernel is not configured");
        return nb::borrow(g_fallbacks.lookup)(self.p->owner("lookup_transform"), target, source, time, timeout, record);
    }

    static nb::object lookup(Self self, nb::handle target, nb::handle source, nb::handle time, nb::handle timeout) {
        if (!no_wait(timeout)) return lookup_fallback(self, target, source, time, timeout, nb::none());
        nb::object result = self.p->lookup_transform(target, source, time);
        if (Py_TYPE(result.ptr()) == g_types.stamped.type) return result;
        return lookup_fallback(self, target, source, time, timeout, result);
    }

    static nb::object lookup_now(Self self, nb::handle target, nb::handle source, nb::handle time) {
        return lookup(self, target, source, time, nb::none());
    }

    static nb::object can(Self self, nb::handle target, nb::handle source, nb::handle time, nb::handle timeout) {
        if (no_wait(timeout)) {
            nb::object possible = self.p->can_transform_plain(target, source, time);
            if (!possible.is_none()) return possible;
        }
        if (!g_fallbacks.can) throw nb::type_error("can_transform: the kernel is not configured");
        return nb::borrow(g_fallbacks.can)(self.p->owner("can_transform"), target, source, time, timeout);
    }

    static nb::object can_now(Self self, nb::handle target, nb::handle source, nb::handle time) {
        return can(self, target, source, time, nb::none());
    }

    // The contract's set_transform: the kernel reads and stores a plain message; Python is
    // called only for what insert_mode_ asks (a wait to wake, requests to re-check) and for
    // what the kernel does not read or refuses (its error is Python's to word).
    static nb::object set_transform(Self self, nb::handle transform, nb::handle authority, nb::handle is_static) {
        PyKernel& k = *self.p;
        if (!g_fallbacks.insert_slow) throw nb::type_error("set_transform: the kernel is not configured");
        if (k.insert_mode_.load() < 2) {
            const int stored = InsertBinding::set_transform(k, transform, authority, is_static);
            if (stored >= 0) {
                nb::object result = nb::bool_(stored > 0);
                // Read after the insert: a wait counted before its first check sees the data
                // or is woken (the kernel's lock orders the insert against that check).
                if (k.insert_mode_.load() != 0)
                    nb::borrow(g_fallbacks.insert_after)(k.owner("set_transform"), transform, result);
                return result;
            }
        }
        return nb::borrow(g_fallbacks.insert_slow)(k.owner("set_transform"), transform, authority, is_static);
    }

    static void set_insert_mode(PyKernel& k, int mode) {
        if (mode < 0 || mode > 2) throw nb::value_error("insert mode is 0, 1 or 2");
        k.insert_mode_.store(mode);
    }

    static void bind(nb::class_<PyKernel>& cls) {
        cls.def("set_transform", &set_transform, "transform"_a.none(), "authority"_a.none(),
                "is_static"_a.none() = false,
                "Store a TransformStamped (it maps data in child_frame_id into header.frame_id): True\n"
                "when stored, False when older than the cache window; InvalidArgumentException for\n"
                "invalid input (nothing stored).")
            .def("set_insert_mode", &set_insert_mode, "mode"_a,
                 "What set_transform does: 0 the kernel alone, 1 then the after-insert fallback, 2\n"
                 "the slow fallback for everything.");
        cls.def("lookup_transform", &lookup_now, "target_frame"_a.none(), "source_frame"_a.none(),
                "time"_a.none(),
                "The TransformStamped that maps data in source_frame into target_frame at time (a Time\n"
                "or seconds; zero = the latest common time); header.stamp is the time used. Raises\n"
                "LookupException, ConnectivityException, ExtrapolationException or\n"
                "InvalidArgumentException with tf2's messages.")
            .def("lookup_transform_waiting", &lookup, "target_frame"_a.none(), "source_frame"_a.none(),
                 "time"_a.none(), "timeout"_a.none() = nb::none(),
                 "lookup_transform, waiting up to timeout (seconds or a Duration) for the data, woken\n"
                 "by its insertion; when the wait runs out, tf2's exception with the wait in its message.")
            .def("can_transform", &can_now, "target_frame"_a.none(), "source_frame"_a.none(),
                 "time"_a.none(), "Whether lookup_transform(target_frame, source_frame, time) would succeed.")
            .def("can_transform_waiting", &can, "target_frame"_a.none(), "source_frame"_a.none(),
                 "time"_a.none(), "timeout"_a.none() = nb::none(),
                 "Whether lookup_transform would succeed, waiting up to timeout for it to; never raises\n"
                 "for missing data.");
    }
};
