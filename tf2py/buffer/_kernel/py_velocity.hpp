// lookup_velocity and lookup_velocities for Python (the maths: velocity.hpp): part of the
// binding (binding.cpp includes it once, inside its anonymous namespace, after PyKernel,
// which names VelocityBinding a friend; VelocityBinding::bind(m) registers it).
#pragma once

struct VelocityTypes {
    Slots stamped, twist, duration;
    bool ready = false;
} g_velocity_types;

// VelocityStamped, Twist and Duration: the classes the fast path builds and reads.
void set_velocity_types(nb::handle velocity_stamped, nb::handle twist, nb::handle duration) {
    VelocityTypes t;
    t.stamped = slots_of(velocity_stamped, {"header", "body_frame_id", "reference_frame_id", "velocity"});
    t.twist = slots_of(twist, {"linear", "angular"});
    t.duration = slots_of(duration, {"nanoseconds"});
    for (PyTypeObject* type : {t.stamped.type, t.twist.type, t.duration.type}) Py_INCREF(type);  // for good
    t.ready = true;
    g_velocity_types = t;
}

struct VelocityBinding {
    using Role = tf2k::VelocityRole;

    // BufferCore.lookup_velocity / Buffer.lookup_velocity: whole in C++ for plain arguments
    // (str frames, a Time or seconds, a Duration or seconds > 0, a tuple or list of 3 finite
    // numbers, a bool). Returns the VelocityStamped, the error record of the lookup that
    // failed (KernelError's tuple), or None for arguments Python must check and convert
    // (core.py's lookup_velocity does, and names what is wrong).
    static nb::object lookup_velocity(nb::pointer_and_handle<PyKernel> self, nb::handle tracking,
                                      nb::handle observation, nb::handle time, nb::handle interval,
                                      nb::handle reference, nb::handle point, nb::handle point_frame,
                                      nb::handle tf2_compatible) {
        PyObject* frames[4];
        frames[tf2k::kTracking] = tracking.ptr();
        frames[tf2k::kObservation] = observation.ptr();
        frames[tf2k::kReference] = reference.is_none() ? observation.ptr() : reference.ptr();
        frames[tf2k::kPointFrame] = point_frame.is_none() ? tracking.ptr() : point_frame.ptr();
        tf2k::VelocityQuery q;
        int64_t t = 0;
        bool plain = g_types.ready && g_velocity_types.ready && fast_time_ns(time.ptr(), t) &&
                     interval_ns(interval.ptr(), q.interval_ns) && point_of(point.ptr(), q.point) &&
                     (tf2_compatible.ptr() == Py_True || tf2_compatible.ptr() == Py_False);
        for (PyObject* f : frames) {  // exact str with a UTF-8 form (no lone surrogates)
            if (plain && (!PyUnicode_CheckExact(f) || !PyUnicode_AsUTF8AndSize(f, nullptr))) {
                PyErr_Clear();
                plain = false;
            }
        }
        if (!plain) return nb::none();
        q.tf2_compatible = tf2_compatible.ptr() == Py_True;
        return run(*self.p, frames, t, q);
    }

    // The query of the checked forms (Python converted the arguments): interval > 0.
    static tf2k::VelocityQuery checked_query(int64_t interval, double px, double py, double pz, bool tf2_compatible) {
        if (interval <= 0) throw nb::value_error("averaging_interval must be positive");
        tf2k::VelocityQuery q;
        q.interval_ns = interval;
        q.point[0] = px;
        q.point[1] = py;
        q.point[2] = pz;
        q.tf2_compatible = tf2_compatible;
        return q;
    }

    // The slow path's call, with arguments Python has checked: str frames (all four given),
    // int64 ns, interval > 0, a finite point.
    static nb::object lookup_velocity_checked(nb::pointer_and_handle<PyKernel> self, nb::str tracking,
                                              nb::str observation, nb::str reference, nb::str point_frame,
                                              int64_t time_ns, int64_t interval, double px, double py, double pz,
                                              bool tf2_compatible) {
        PyObject* frames[4] = {tracking.ptr(), observation.ptr(), reference.ptr(), point_frame.ptr()};
        tf2k::VelocityQuery q = checked_query(interval, px, py, pz, tf2_compatible);
        return run(*self.p, frames, time_ns, q);
    }

    // lookup_velocities' kernel: (N, 6) rows (linear xyz, angular xyz) for N int64 ns times;
    // KernelError for the first time that fails (its index in the error's last field).
    static nb::object lookup_velocities(PyKernel& k, nb::str tracking, nb::str observation, nb::str reference,
                                        nb::str point_frame, Int64Array times, int64_t interval, double px,
                                        double py, double pz, bool tf2_compatible) {
        PyObject* frames[4] = {tracking.ptr(), observation.ptr(), reference.ptr(), point_frame.ptr()};
        tf2k::VelocityQuery q = checked_query(interval, px, py, pz, tf2_compatible);
        const size_t n = times.shape(0);
        double* data = static_cast<double*>(std::malloc((6 * n + 1) * sizeof(double)));
        if (!data) throw std::bad_alloc();
        nb::capsule owner(data, [](void* p) noexcept { std::free(p); });
        const int64_t* ts = times.data();
        Reading access(k.lock_);
        keys(k.k_, frames, q);
        size_t failed_index = 0;
        tf2k::VelocityFailure failed;
        const tf2k::Error e =
            tf2k::velocities(k.k_, q, [ts](size_t i) { return ts[i]; }, n, data, failed_index, failed);
        if (e.code != tf2k::ErrorCode::None) {
            nb::tuple t = error_of(e, frames, failed, failed_index);
            PyErr_SetObject(g_kernel_error, t.ptr());
            throw nb::python_error();
        }
        return nb::cast(nb::ndarray<nb::numpy, double, nb::ndim<2>>(data, {n, 6}, owner));
    }

    static void bind() {
        nb::handle cls = nb::type<PyKernel>();
        nb::cpp_function_def(
            &lookup_velocity, nb::scope(cls), nb::name("lookup_velocity_plain"), nb::is_method(), "tracking_frame"_a.none(),
            "observation_frame"_a.none(), "time"_a.none(), "averaging_interval"_a.none(),
            "reference_frame"_a.none() = nb::none(), "reference_point"_a.none() = nb::make_tuple(0.0, 0.0, 0.0),
            "reference_point_frame"_a.none() = nb::none(), "tf2_compatible"_a.none() = false,
            "The VelocityStamped of tracking_frame as seen from observation_frame around time (a Time or\n"
            "seconds), from the transforms at the ends of averaging_interval (a Duration or seconds):\n"
            "the angular velocity of tracking_frame and the velocity of its point at reference_point\n"
            "(given in reference_point_frame, default tracking_frame), both in reference_frame's axes\n"
            "(default observation_frame); m/s and rad/s. tf2_compatible=True: tf2 0.39's numbers.\n"
            "Raises what lookup_transform raises.");
        nb::cpp_function_def(&lookup_velocity_checked, nb::scope(cls), nb::name("lookup_velocity"),
                             nb::is_method(), "tracking"_a, "observation"_a, "reference"_a, "point_frame"_a,
                             "time_ns"_a, "interval_ns"_a, "px"_a, "py"_a, "pz"_a, "tf2_compatible"_a);
        nb::cpp_function_def(&lookup_velocities, nb::scope(cls), nb::name("lookup_velocities"), nb::is_method(),
                             "tracking"_a, "observation"_a, "reference"_a, "point_frame"_a, "times"_a.noconvert(),
                             "interval_ns"_a, "px"_a, "py"_a, "pz"_a, "tf2_compatible"_a);
    }

  private:
    // The VelocityStamped, or the error record naming the failed lookup's frames (source
    // and target as given, at the record's places 5 and 6).
    static nb::object run(PyKernel& k, PyObject* const* frames, int64_t t, tf2k::VelocityQuery& q) {
        tf2k::Velocity v;
        tf2k::VelocityFailure failed;
        tf2k::Error e;
        {
            Reading access(k.lock_);
            keys(k.k_, frames, q);
            tf2k::VelocityLookup lookup(k.k_, q);
            tf2k::Path& path = PyKernel::path();
            e = lookup.at(t, lookup.latest(path), v, failed, path);
        }
        if (e.code != tf2k::ErrorCode::None) return error_of(e, frames, failed, 0);
        return build(frames[tf2k::kReference], frames[tf2k::kTracking], v);
    }

    // Each role's key (velocity.hpp): the kernel's id, or <= 0 for a name a lookup cannot use;
    // equal names share one. frames: str objects.
    static void keys(const Kernel& k, PyObject* const* frames, tf2k::VelocityQuery& q) {
        std::string names[4];
        for (int r = 0; r < 4; ++r) {
            int same = -1;
            for (int j = 0; j < r && same < 0; ++j) {
                if (frames[j] == frames[r]) same = j;
            }
            if (same < 0) {
                if (!str_view(frames[r], names[r])) names[r] = "/\x01" + std::to_string(r);  // lone surrogates: unusable
                for (int j = 0; j < r && same < 0; ++j) {
                    if (frames[j] != frames[r] && names[j] == names[r]) same = j;
                }
            } else {
                names[r] = names[same];
            }
            if (same >= 0) {
                q.key[r] = q.key[same];
                continue;
            }
            const int32_t id = k.lookup_id(names[r]);
            q.key[r] = id > 0 ? id : -r;
        }
    }

    // The error tuple of errors.py's query_error (code, argument, kind, time, stamp, source,
    // target, failed index), naming the failed lookup's frames as they were given.
    static nb::tuple error_of(const tf2k::Error& e, PyObject* const* frames, const tf2k::VelocityFailure& failed,
                              size_t failed_index) {
        return nb::make_tuple(static_cast<int>(e.code), e.argument, static_cast<int>(e.kind), e.time, e.stamp,
                              nb::handle(frames[failed.source]), nb::handle(frames[failed.target]), failed_index);
    }

    // A Duration, or plain seconds (as fast_time_ns reads them), in ns; false unless > 0.
    static bool interval_ns(PyObject* o, int64_t& ns) {
        if (Py_TYPE(o) == g_velocity_types.duration.type) {
            PyObject* v = slot(o, g_velocity_types.duration.offset[0]);
            if (!v || !PyLong_CheckExact(v)) return false;
            int overflow = 0;
            const long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (overflow || (x == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                return false;
            }
            ns = x;
        } else if (Py_TYPE(o) == g_types.time.type || !fast_time_ns(o, ns)) {
            return false;
        }
        return ns > 0;
    }

    // An exact tuple or list of 3 finite float / int (not bool) values.
    static bool point_of(PyObject* o, double* p) {
        if ((!PyTuple_CheckExact(o) && !PyList_CheckExact(o)) || PySequence_Fast_GET_SIZE(o) != 3) return false;
        PyObject** items = PySequence_Fast_ITEMS(o);
        for (int i = 0; i < 3; ++i) {
            if (PyBool_Check(items[i]) || !plain_double(items[i], p[i]) || !std::isfinite(p[i])) return false;
        }
        return true;
    }

    // VelocityStamped(Header(Time(stamp), reference), tracking, "", Twist(linear, angular)).
    static nb::object build(PyObject* reference, PyObject* tracking, const tf2k::Velocity& v) {
        const MessageTypes& t = g_types;
        const VelocityTypes& vt = g_velocity_types;
        PyObject* stamp = make(t.time, {PyLong_FromLongLong(v.stamp)});
        Py_INCREF(reference);
        PyObject* header = make(t.header, {stamp, reference});
        PyObject* linear = make(t.vector3, {PyFloat_FromDouble(v.linear[0]), PyFloat_FromDouble(v.linear[1]),
                                            PyFloat_FromDouble(v.linear[2])});
        PyObject* angular = make(t.vector3, {PyFloat_FromDouble(v.angular[0]), PyFloat_FromDouble(v.angular[1]),
                                             PyFloat_FromDouble(v.angular[2])});
        PyObject* twist = make(vt.twist, {linear, angular});
        Py_INCREF(tracking);
        PyObject* out = make(vt.stamped, {header, tracking, PyUnicode_FromStringAndSize("", 0), twist});
        if (!out) throw nb::python_error();
        return nb::steal(out);
    }
};
