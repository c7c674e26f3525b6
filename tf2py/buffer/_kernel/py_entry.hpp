// The contract's lookup_transform and can_transform themselves: BufferCore's and Buffer's
// public methods are these functions, so a lookup that succeeds runs no Python frame at all
// (through a Python method around the kernel's call, a depth-3 lookup took 5 921
// instructions against 4 871). What they do not answer (an error to word, arguments to
// convert, a wait) goes to the fallback Python registered with set_query_fallbacks: Python
// keeps that policy, and the kernel calls nothing of Python's by name. Part of the binding
// (binding.cpp includes it once, inside its anonymous namespace, after PyKernel).
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

    static void bind(nb::module_& m, nb::class_<PyKernel>& cls) {
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
