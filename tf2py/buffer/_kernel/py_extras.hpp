// One frame's cache and the maths, for Python's tests, tools and apply.py: part of the
// binding (binding.cpp includes it once, inside its anonymous namespace).
#pragma once

// One frame's cache on its own, for tests and tools (parents are plain ints here).
class PyTimeCache {
  public:
    explicit PyTimeCache(int64_t cache_time_ns, bool is_static) : c_(cache_time_ns < 0 ? 0 : cache_time_ns, is_static) {}

    bool insert(int64_t stamp, double tx, double ty, double tz, double qx, double qy, double qz, double qw,
                int32_t parent) {
        const double v[7] = {tx, ty, tz, qx, qy, qz, qw};
        return c_.insert(stamp, v, parent);
    }

    nb::object get(int64_t t) const {
        Pose p;
        int32_t parent = 0;
        if (!c_.get(t, p, parent)) return nb::none();
        return nb::make_tuple(p.t[0], p.t[1], p.t[2], p.q[0], p.q[1], p.q[2], p.q[3], parent);
    }

    int32_t parent_at(int64_t t) const { return c_.parent_at(t); }

    nb::tuple error(int64_t t) const {
        int64_t stamp = 0;
        const auto kind = c_.error(t, stamp);
        return nb::make_tuple(static_cast<int>(kind), stamp);
    }

    nb::tuple latest() const { return nb::make_tuple(c_.latest_stamp(), c_.latest_parent()); }
    int64_t latest_stamp() const { return c_.latest_stamp(); }
    int64_t oldest_stamp() const { return c_.oldest_stamp(); }
    size_t size() const { return c_.size(); }
    bool is_static() const { return c_.is_static(); }
    void clear() { c_.clear(); }

    nb::list samples() const {
        nb::list out;
        for (size_t k = 0; k < c_.size(); ++k) {
            const double* v = c_.values_at(k);
            out.append(nb::make_tuple(c_.stamp_at(k), nb::make_tuple(v[0], v[1], v[2], v[3], v[4], v[5], v[6]),
                                      c_.parent_of(k)));
        }
        return out;
    }

  private:
    tf2k::TimeCache c_;
};

// The maths for Python (tf2py/buffer/apply.py, messages.py): the same functions the kernel
// uses, so that there is one implementation of each. Poses are 7 numbers.
Pose pose_of(nb::handle seq) {
    nb::sequence s = nb::borrow<nb::sequence>(seq);
    if (nb::len(s) != 7) throw nb::value_error("a pose is 7 numbers (tx, ty, tz, qx, qy, qz, qw)");
    Pose p;
    for (size_t k = 0; k < 7; ++k) {
        const double v = nb::cast<double>(s[k]);
        if (k < 3)
            p.t[k] = v;
        else
            p.q[k - 3] = v;
    }
    return p;
}

nb::tuple tuple_of(const Pose& p) { return nb::make_tuple(p.t[0], p.t[1], p.t[2], p.q[0], p.q[1], p.q[2], p.q[3]); }
