// lookup_velocity: how one frame moves as seen from another, estimated from the two
// transforms at the ends of an averaging interval, beside the walk that fetches them. Two
// answers (API.md "Velocity", tf2-reference.md §14.1):
//  - the physical one (default): the angular velocity of tracking relative to observation,
//    and the velocity of the point fixed in tracking at the reference point, both in
//    reference's axes;
//  - tf2_compatible: ROS 2 tf2 0.39's BufferCore::lookupVelocity, step for step and in
//    tf2's floating-point order (its known defects included), for checking against C++ nodes.
// Both share tf2's window: end = min(time + interval/2, latest common time), start =
// max(0.00001 s + interval, end) - interval, the stamp start + interval/2. No Python here:
// the binding is py_velocity.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernel.hpp"
#include "rigid.hpp"

namespace tf2k {

// The frames of a velocity query, by role.
enum VelocityRole : int { kTracking = 0, kObservation = 1, kReference = 2, kPointFrame = 3 };

struct VelocityQuery {
    // Per role: the kernel's id (> 0) of a frame a lookup can use; for a name it cannot use
    // (unknown, empty, a leading '/'), a number <= 0, the same for the same name. Equal keys
    // are equal names: tf2 answers a lookup between equal names with the identity before it
    // validates them.
    int32_t key[4] = {0, 0, 0, 0};
    double point[3] = {0.0, 0.0, 0.0};  // the reference point, in the point frame's axes
    int64_t interval_ns = 0;            // > 0 (the binding refuses anything else)
    bool tf2_compatible = false;
};

struct Velocity {
    double linear[3];
    double angular[3];
    int64_t stamp;  // ns
};

// The lookup that failed, by role (its target and source frames name the error).
struct VelocityFailure {
    int target = kObservation;
    int source = kTracking;
};

// Per role-pair stream of a batch: the hints of the lookups at the window's start, its end
// and at the requested time (sorted times find their interval at once).
struct VelocityHints {
    Hint* start = nullptr;
    Hint* end = nullptr;
    Hint* at = nullptr;
};

// tf2::timeToSec: whole seconds and nanoseconds (C's remainder) scaled separately.
inline double tf2_seconds(int64_t ns) {
    const int64_t nsec = ns % 1000000000;
    const int64_t sec = (ns - nsec) / 1000000000;
    return static_cast<double>(sec) + 1e-9 * static_cast<double>(nsec);
}

// tf2::timeFromSec: floor for the seconds, the fraction rounded half away from zero (a
// carry of 1e9 ns adds a second). tf2 keeps the seconds in an int32; here they saturate at
// the ends of int64 nanoseconds instead of overflowing.
inline int64_t tf2_time_from_seconds(double seconds) {
    if (!(seconds > -9.2e9)) return INT64_MIN;  // NaN too: no lookup can answer it
    if (!(seconds < 9.2e9)) return INT64_MAX;
    const double sec = std::floor(seconds);
    const auto nsec = static_cast<int64_t>(std::round((seconds - sec) * 1e9));
    return static_cast<int64_t>(sec) * 1000000000 + nsec;
}

// a + b and a - b in int64 nanoseconds, saturating.
inline int64_t add_ns(int64_t a, int64_t b) {
    if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b) return INT64_MIN;
    return a + b;
}

class VelocityLookup {
  public:
    VelocityLookup(const Kernel& kernel, const VelocityQuery& query) : k_(kernel), q_(query) {}

    // tf2's latest common time of observation and tracking (0 when it fails: tf2 ignores
    // that error, the lookups report it). The same for every time of a batch.
    int64_t latest(Path& path) const {
        const int32_t a = q_.key[kObservation], b = q_.key[kTracking];
        int64_t t = 0;
        if (a > 0 && b > 0 && k_.common_time(a, b, t, path).code == ErrorCode::None) return t;
        return 0;
    }

    // The velocity at `time` (ns; 0: tf2_compatible, 0 s as in tf2; physical, the latest
    // common time). On failure, *failed names the lookup that failed.
    Error at(int64_t time, int64_t latest, Velocity& out, VelocityFailure& failed, Path& path,
             const VelocityHints& hints = VelocityHints{}) const {
        return q_.tf2_compatible ? tf2_steps(time, latest, out, failed, path, hints)
                                 : physical(time == 0 ? latest : time, latest, out, failed, path, hints);
    }

  private:
    // T(target <- source) at t by roles: the identity for equal names (unchecked, as tf2),
    // a Frame error for a name a lookup cannot use (the target's first), else the walk.
    Error lookup(int target, int source, int64_t t, Pose& out, VelocityFailure& failed, Path& path,
                 Hint* hints) const {
        const int32_t a = q_.key[target], b = q_.key[source];
        if (a == b) {
            out = identity_pose();
            return Error{};
        }
        Error e;
        if (a <= 0 || b <= 0) {
            e.code = ErrorCode::Frame;
            e.argument = a <= 0 ? 0 : 1;
            e.source = e.target = -1;
        } else {
            int64_t used = 0;
            e = k_.lookup(a, b, t, out, used, path, hints);
        }
        if (e.code != ErrorCode::None) {
            failed.target = target;
            failed.source = source;
        }
        return e;
    }

    // The physical answer. The window in exact nanoseconds (tf2's, without its rounding
    // through double seconds); S, E = observation <- tracking at its ends.
    //   v = (E.origin - S.origin) / dt: tracking's origin, in observation's axes;
    //   w = S.rotation * rotation_vector(S^-1 E) / dt: its angular velocity, same axes;
    //   the point p (fixed in tracking, at the reference point at `time`) moves at
    //   v + w x (p - o), o = tracking's origin at `time`;
    //   both vectors turned into reference's axes (rotation reference <- observation at time).
    Error physical(int64_t time, int64_t latest, Velocity& out, VelocityFailure& failed, Path& path,
                   const VelocityHints& hints) const {
        const int64_t interval = q_.interval_ns;
        const int64_t end = std::min(add_ns(time, interval / 2), latest);
        const int64_t start = add_ns(std::max(add_ns(10000, interval), end), -interval);
        const double dt = static_cast<double>(add_ns(end, -start)) * 1e-9;  // start >= 0
        Pose s, e, p;
        Error err = lookup(kObservation, kTracking, start, s, failed, path, hints.start);
        if (err.code == ErrorCode::None) err = lookup(kObservation, kTracking, end, e, failed, path, hints.end);
        // tf2 looks up reference <- tracking at `time` (§14.1 step 5) whatever the point: a time
        // its data cannot answer fails as there, not only when the point needs it. Within the
        // window both ends answered, so only a time outside it is looked up for that.
        if (err.code == ErrorCode::None && (time < start || time > end)) {
            Pose check;
            err = lookup(kReference, kTracking, time, check, failed, path, hints.at);
        }
        if (err.code != ErrorCode::None) return err;
        double relative[4], turn[3], w[3], v[3];
        relative_rotation(s.q, e.q, relative);
        rotation_vector(relative, turn);
        rotate(s.q, turn, w);
        for (int i = 0; i < 3; ++i) {
            w[i] /= dt;
            v[i] = (e.t[i] - s.t[i]) / dt;
        }
        const double* point = q_.point;
        if (q_.key[kPointFrame] != q_.key[kTracking] || point[0] != 0.0 || point[1] != 0.0 || point[2] != 0.0) {
            // r = p - o in observation's axes
            double r[3];
            err = lookup(kObservation, kTracking, time, p, failed, path, hints.at);
            if (err.code != ErrorCode::None) return err;
            if (q_.key[kPointFrame] == q_.key[kTracking]) {
                rotate(p.q, point, r);
            } else {
                Pose f;
                err = lookup(kObservation, kPointFrame, time, f, failed, path, hints.at);
                if (err.code != ErrorCode::None) return err;
                const Pose at = compose(f, Pose{{point[0], point[1], point[2]}, {0.0, 0.0, 0.0, 1.0}});
                for (int i = 0; i < 3; ++i) r[i] = at.t[i] - p.t[i];
            }
            v[0] += w[1] * r[2] - w[2] * r[1];
            v[1] += w[2] * r[0] - w[0] * r[2];
            v[2] += w[0] * r[1] - w[1] * r[0];
        }
        if (q_.key[kReference] != q_.key[kObservation]) {
            Pose ref;
            err = lookup(kReference, kObservation, time, ref, failed, path, hints.at);
            if (err.code != ErrorCode::None) return err;
            rotate(ref.q, v, out.linear);
            rotate(ref.q, w, out.angular);
        } else {
            std::copy(v, v + 3, out.linear);
            std::copy(w, w + 3, out.angular);
        }
        for (int i = 0; i < 3; ++i) {  // no negative zeros in a physical answer
            out.linear[i] += 0.0;
            out.angular[i] += 0.0;
        }
        out.stamp = add_ns(start, interval / 2);
        return Error{};
    }

    // tf2 0.39's steps (tf2-reference.md §14.1), its conversions and rounding included.
    Error tf2_steps(int64_t time, int64_t latest, Velocity& out, VelocityFailure& failed, Path& path,
                    const VelocityHints& hints) const {
        const double time_s = tf2_seconds(time);
        const double interval_s = static_cast<double>(q_.interval_ns) / 1e9;  // duration<double>
        const double end_s = std::min(time_s + interval_s * 0.5, tf2_seconds(latest));
        const double start_s = std::max(0.00001 + interval_s, end_s) - interval_s;
        const double dt = end_s - start_s;  // the interval cut short at the ends of the data
        Pose s, e, r, f;
        Error err = lookup(kObservation, kTracking, tf2_time_from_seconds(start_s), s, failed, path, hints.start);
        if (err.code == ErrorCode::None)
            err = lookup(kObservation, kTracking, tf2_time_from_seconds(end_s), e, failed, path, hints.end);
        if (err.code != ErrorCode::None) return err;
        double sb[9], eb[9], si[9], m[9], q[4], axis[3], o[3], angle = 0.0;
        basis_of(s.q, sb);
        basis_of(e.q, eb);
        basis_inverse(sb, si);
        basis_product(si, eb, m);
        basis_rotation(m, q);
        axis_angle(q, axis, angle);
        basis_apply(sb, axis, o);
        double twist_vel[3], twist_rot[3];
        for (int i = 0; i < 3; ++i) twist_vel[i] = (e.t[i] - s.t[i]) / dt;
        const double rate = angle / dt;
        for (int i = 0; i < 3; ++i) twist_rot[i] = o[i] * rate;
        // "correct for the position of the reference frame": R = reference <- tracking at
        // the requested time (through double seconds), applied to vectors in observation's axes.
        const int64_t at = tf2_time_from_seconds(time_s);
        err = lookup(kReference, kTracking, at, r, failed, path, hints.at);
        if (err.code != ErrorCode::None) return err;
        double rb[9], rot[3], vel[3];
        basis_of(r.q, rb);
        basis_apply(rb, twist_rot, rot);
        basis_apply(rb, twist_vel, vel);
        vel[0] = vel[0] + (r.t[1] * rot[2] - r.t[2] * rot[1]);
        vel[1] = vel[1] + (r.t[2] * rot[0] - r.t[0] * rot[2]);
        vel[2] = vel[2] + (r.t[0] * rot[1] - r.t[1] * rot[0]);
        // Re-reference about the point: rp_orig = R * (0, 0, 0) (the same lookup again),
        // rp_desired = T(reference <- point frame) * point; vel += rot * delta, where * is
        // tf2::Vector3's element-wise product.
        const double zero[3] = {0.0, 0.0, 0.0};
        double orig[3], desired[3];
        basis_apply(rb, zero, orig);
        for (int i = 0; i < 3; ++i) orig[i] = orig[i] + r.t[i];
        err = lookup(kReference, kPointFrame, at, f, failed, path, hints.at);
        if (err.code != ErrorCode::None) return err;
        double fb[9];
        basis_of(f.q, fb);
        basis_apply(fb, q_.point, desired);
        for (int i = 0; i < 3; ++i) {
            desired[i] = desired[i] + f.t[i];
            out.linear[i] = vel[i] + rot[i] * (desired[i] - orig[i]);
            out.angular[i] = rot[i];
        }
        out.stamp = tf2_time_from_seconds(start_s + interval_s * 0.5);
        return Error{};
    }

    const Kernel& k_;
    const VelocityQuery& q_;
};

// Velocities at n times (time_at(k): ns) into rows of 6 (linear xyz, angular xyz); on
// failure *failed_index is the first time (in order) that fails.
template <class TimeAt>
Error velocities(const Kernel& kernel, const VelocityQuery& query, TimeAt time_at, size_t n, double* rows,
                 size_t& failed_index, VelocityFailure& failed) {
    VelocityLookup lookup(kernel, query);
    Path path;
    const int64_t latest = lookup.latest(path);
    std::vector<Hint> start(kernel.frame_count()), end(kernel.frame_count()), at(kernel.frame_count());
    const VelocityHints hints{start.data(), end.data(), at.data()};
    Velocity v;
    for (size_t k = 0; k < n; ++k) {
        const Error e = lookup.at(time_at(k), latest, v, failed, path, hints);
        if (e.code != ErrorCode::None) {
            failed_index = k;
            return e;
        }
        double* row = rows + 6 * k;
        std::copy(v.linear, v.linear + 3, row);
        std::copy(v.angular, v.angular + 3, row + 3);
    }
    return Error{};
}

}  // namespace tf2k
