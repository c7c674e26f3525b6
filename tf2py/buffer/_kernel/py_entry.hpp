// The contract's lookup_transform, can_transform and set_transform themselves: BufferCore's
// and Buffer's public methods are these functions, so a lookup or an insert that succeeds runs
// no Python frame at all (through a Python method around the kernel's call, a depth-3 lookup
// took 5 921 instructions against 4 871). What they do not do themselves (an error to word,
// arguments to convert, a wait, requests to re-check) goes to the fallbacks Python registered
// with set_query_fallbacks and set_insert_fallbacks: Python keeps that policy and says, through
// a store's insert mode, when it must see an insert; the kernel calls nothing of Python's by
// name. Part of the binding (binding.cpp includes it once, inside its anonymous namespace,
// after PyKernel and the inserts).
#pragma once

PyObject* g_lookup_fallback = nullptr;  // (store, target, source, time, timeout, record)
PyObject* g_can_fallback = nullptr;     // (store, target, source, time, timeout)

void set_query_fallbacks(nb::handle lookup, nb::handle can) {
    if (!PyCallable_Check(lookup.ptr()) || !PyCallable_Check(can.ptr()))
        throw nb::type_error("set_query_fallbacks needs two callables");
    Py_XDECREF(g_lookup_fallback);
    Py_XDECREF(g_can_fallback);
    g_lookup_fallback = lookup.inc_ref().ptr();
    g_can_fallback = can.inc_ref().ptr();
}

PyObject* g_insert_slow = nullptr;   // (store, transform, authority, is_static) -> bool
PyObject* g_insert_after = nullptr;  // (store, transform, stored) after a kernel insert

void set_insert_fallbacks(nb::handle slow, nb::handle after) {
    if (!PyCallable_Check(slow.ptr()) || !PyCallable_Check(after.ptr()))
        throw nb::type_error("set_insert_fallbacks needs two callables");
    Py_XDECREF(g_insert_slow);
    Py_XDECREF(g_insert_after);
    g_insert_slow = slow.inc_ref().ptr();
    g_insert_after = after.inc_ref().ptr();
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
        if (!g_lookup_fallback) throw nb::type_error("lookup_transform: no fallback (set_query_fallbacks)");
        return nb::borrow(g_lookup_fallback)(self.h, target, source, time, timeout, record);
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
        if (!g_can_fallback) throw nb::type_error("can_transform: no fallback (set_query_fallbacks)");
        return nb::borrow(g_can_fallback)(self.h, target, source, time, timeout);
    }

    static nb::object can_now(Self self, nb::handle target, nb::handle source, nb::handle time) {
        return can(self, target, source, time, nb::none());
    }

    // The contract's set_transform: the kernel reads and stores a plain message; Python is
    // called only for what insert_mode_ asks (a wait to wake, requests to re-check) and for
    // what the kernel does not read or refuses (its error is Python's to word).
    static nb::object set_transform(Self self, nb::handle transform, nb::handle authority, nb::handle is_static) {
        PyKernel& k = *self.p;
        if (!g_insert_slow || !g_insert_after) throw nb::type_error("set_transform: no fallback (set_insert_fallbacks)");
        if (k.insert_mode_.load() < 2) {
            const int stored = InsertBinding::set_transform(k, transform, authority, is_static);
            if (stored >= 0) {
                nb::object result = nb::bool_(stored > 0);
                // Read after the insert: a wait counted before its first check sees the data
                // or is woken (the kernel's lock orders the insert against that check).
                if (k.insert_mode_.load() != 0) nb::borrow(g_insert_after)(self.h, transform, result);
                return result;
            }
        }
        return nb::borrow(g_insert_slow)(self.h, transform, authority, is_static);
    }

    static void set_insert_mode(PyKernel& k, int mode) {
        if (mode < 0 || mode > 2) throw nb::value_error("insert mode is 0, 1 or 2");
        k.insert_mode_.store(mode);
    }

    static void bind(nb::module_& m, nb::class_<PyKernel>& cls) {
        m.def("set_insert_fallbacks", &set_insert_fallbacks, "slow"_a, "after"_a,
              "Register what the public set_transform calls: slow(store, transform, authority,\n"
              "is_static) for what the kernel does not store itself, after(store, transform, stored)\n"
              "after a kernel insert when the store's insert mode is not 0.");
        cls.def("_k_set_transform_entry", &set_transform, "transform"_a.none(), "authority"_a.none(),
                "is_static"_a.none() = false,
                "Store a TransformStamped (it maps data in child_frame_id into header.frame_id): True\n"
                "when stored, False when older than the cache window; InvalidArgumentException for\n"
                "invalid input (nothing stored).")
            .def("_k_set_insert_mode", &set_insert_mode, "mode"_a,
                 "What set_transform does: 0 the kernel alone, 1 then the after-insert fallback, 2\n"
                 "the slow fallback for everything.");
        m.def("set_query_fallbacks", &set_query_fallbacks, "lookup"_a, "can"_a,
              "Register what the public lookup_transform / can_transform call for what they do not\n"
              "answer: lookup(store, target, source, time, timeout, record), can(store, target,\n"
              "source, time, timeout).");
        cls.def("_k_lookup_transform_entry", &lookup_now, "target_frame"_a.none(), "source_frame"_a.none(),
                "time"_a.none(),
                "The TransformStamped that maps data in source_frame into target_frame at time (a Time\n"
                "or seconds; zero = the latest common time); header.stamp is the time used. Raises\n"
                "LookupException, ConnectivityException, ExtrapolationException or\n"
                "InvalidArgumentException with tf2's messages.")
            .def("_k_lookup_transform_waiting", &lookup, "target_frame"_a.none(), "source_frame"_a.none(),
                 "time"_a.none(), "timeout"_a.none() = nb::none(),
                 "lookup_transform, waiting up to timeout (seconds or a Duration) for the data, woken\n"
                 "by its insertion; when the wait runs out, tf2's exception with the wait in its message.")
            .def("_k_can_transform_entry", &can_now, "target_frame"_a.none(), "source_frame"_a.none(),
                 "time"_a.none(), "Whether lookup_transform(target_frame, source_frame, time) would succeed.")
            .def("_k_can_transform_waiting", &can, "target_frame"_a.none(), "source_frame"_a.none(),
                 "time"_a.none(), "timeout"_a.none() = nb::none(),
                 "Whether lookup_transform would succeed, waiting up to timeout for it to; never raises\n"
                 "for missing data.");
    }
};
