// Rigid-transform maths on (tx, ty, tz, qx, qy, qz, qw): the one implementation tf2py uses
// for composing, inverting, interpolating and converting stored transforms.
//
// A pose stored for (parent P, child C) maps coordinates in C into P: p_P = R p_C + t.
#pragma once

#include <cmath>

namespace tf2k {

struct Pose {
    double t[3];
    double q[4];  // x, y, z, w (unit)
};

inline Pose identity_pose() { return Pose{{0.0, 0.0, 0.0}, {0.0, 0.0, 0.0, 1.0}}; }

// a ∘ b: apply b, then a.
inline Pose compose(const Pose& a, const Pose& b) {
    const double ax = a.q[0], ay = a.q[1], az = a.q[2], aw = a.q[3];
    const double bx = b.t[0], by = b.t[1], bz = b.t[2];
    // Rotate b's translation by a's quaternion: v + w*u + q × u, u = 2 (q × v).
    const double ux = 2.0 * (ay * bz - az * by);
    const double uy = 2.0 * (az * bx - ax * bz);
    const double uz = 2.0 * (ax * by - ay * bx);
    Pose out;
    out.t[0] = a.t[0] + bx + aw * ux + ay * uz - az * uy;
    out.t[1] = a.t[1] + by + aw * uy + az * ux - ax * uz;
    out.t[2] = a.t[2] + bz + aw * uz + ax * uy - ay * ux;
    const double qx = b.q[0], qy = b.q[1], qz = b.q[2], qw = b.q[3];
    out.q[0] = aw * qx + ax * qw + ay * qz - az * qy;
    out.q[1] = aw * qy - ax * qz + ay * qw + az * qx;
    out.q[2] = aw * qz + ax * qy - ay * qx + az * qw;
    out.q[3] = aw * qw - ax * qx - ay * qy - az * qz;
    return out;
}

// The inverse of a rigid transform with a unit quaternion.
inline Pose inverse(const Pose& a) {
    Pose r{{0.0, 0.0, 0.0}, {-a.q[0], -a.q[1], -a.q[2], a.q[3]}};
    Pose moved{{-a.t[0], -a.t[1], -a.t[2]}, {0.0, 0.0, 0.0, 1.0}};
    Pose out = compose(r, moved);
    return out;
}

// The arc between two quaternions for tf2's slerp (LinearMath/Quaternion.h): the shortest
// path (the second quaternion negated when the dot product is negative); no turn when the
// angle is zero. Batch lookups keep it per pair of samples.
struct Arc {
    double sign = 1.0;  // -1: the second quaternion is negated
    double theta = 0.0;
    double cos_theta = 1.0;
    double sin_theta = 0.0;
    double inv_sin = 0.0;
    bool still = true;  // angle zero: the first quaternion
};

inline Arc make_arc(const double* a, const double* b) {
    Arc arc;
    double dot = a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
    if (dot < 0.0) {
        dot = -dot;
        arc.sign = -1.0;
    }
    if (dot < 1.0) {
        arc.theta = std::acos(dot);
        arc.cos_theta = dot;
        arc.sin_theta = std::sin(arc.theta);
        arc.inv_sin = 1.0 / arc.sin_theta;
        arc.still = false;
    }
    return arc;
}

// sin and cos of x. Small angles (the arc between two samples of a stream, |x| < 1/4) by
// their Taylor series: the first omitted terms are below 1e-17 relative (x^13/13!, x^14/14!),
// so within an ulp or two of libm's, at a fraction of the cost; larger angles by libm.
inline void sin_cos(double x, double& s, double& c) {
    if (x < 0.25 && x > -0.25) {
        const double x2 = x * x;
        s = x + x * x2 *
                    (-1.0 / 6.0 +
                     x2 * (1.0 / 120.0 + x2 * (-1.0 / 5040.0 + x2 * (1.0 / 362880.0 + x2 * (-1.0 / 39916800.0)))));
        c = 1.0 + x2 * (-0.5 + x2 * (1.0 / 24.0 +
                                     x2 * (-1.0 / 720.0 +
                                           x2 * (1.0 / 40320.0 + x2 * (-1.0 / 3628800.0 + x2 * (1.0 / 479001600.0))))));
        return;
    }
    s = std::sin(x);
    c = std::cos(x);
}

// tf2's slerp from a (ratio 0) to b (ratio 1) along a known arc; no re-normalisation.
inline void slerp_on(const double* a, const double* b, const Arc& arc, double ratio, double* out) {
    if (arc.still) {
        out[0] = a[0];
        out[1] = a[1];
        out[2] = a[2];
        out[3] = a[3];
        return;
    }
    // sin((1 - r) θ) = sin θ cos rθ - cos θ sin rθ: one sine and cosine of rθ per call.
    const double angle = ratio * arc.theta;
    double sin_r, cos_r;
    sin_cos(angle, sin_r, cos_r);
    const double s0 = (arc.sin_theta * cos_r - arc.cos_theta * sin_r) * arc.inv_sin;
    const double s1 = sin_r * arc.inv_sin * arc.sign;
    out[0] = a[0] * s0 + b[0] * s1;
    out[1] = a[1] * s0 + b[1] * s1;
    out[2] = a[2] * s0 + b[2] * s1;
    out[3] = a[3] * s0 + b[3] * s1;
}

inline void slerp(const double* a, const double* b, double ratio, double* out) {
    slerp_on(a, b, make_arc(a, b), ratio, out);
}

// Linear translation, slerped rotation between a (ratio 0) and b (ratio 1).
inline Pose interpolate(const double* a, const double* b, const Arc& arc, double ratio) {
    Pose out;
    const double r0 = 1.0 - ratio;
    out.t[0] = r0 * a[0] + ratio * b[0];
    out.t[1] = r0 * a[1] + ratio * b[1];
    out.t[2] = r0 * a[2] + ratio * b[2];
    slerp_on(a + 3, b + 3, arc, ratio, out.q);
    return out;
}

// tf2 stores a rotation as a matrix and reads the quaternion back with Shepperd's method
// (Matrix3x3::getRotation): w > 0 when the trace is positive, else the component of the
// largest diagonal element is positive. Flip q to that sign (q and -q are one rotation).
inline void canonical_sign(double* q) {
    const double x = q[0], y = q[1], z = q[2], w = q[3];
    const double n = x * x + y * y + z * z + w * w;
    const double s = 2.0 / n;
    const double m00 = 1.0 - (y * y * s + z * z * s);
    const double m11 = 1.0 - (x * x * s + z * z * s);
    const double m22 = 1.0 - (x * x * s + y * y * s);
    double lead;
    if (m00 + m11 + m22 > 0.0) {
        lead = w;
    } else {
        const int i = m00 < m11 ? (m11 < m22 ? 2 : 1) : (m00 < m22 ? 2 : 0);
        lead = q[i];
    }
    if (lead < 0.0) {
        q[0] = -x;
        q[1] = -y;
        q[2] = -z;
        q[3] = -w;
    }
}

// Row-major 4x4 homogeneous matrix (scale 2/|q|², as tf2's setRotation).
inline void to_matrix(const Pose& p, double* m) {
    const double x = p.q[0], y = p.q[1], z = p.q[2], w = p.q[3];
    const double n = x * x + y * y + z * z + w * w;
    const double s = n > 0.0 ? 2.0 / n : 0.0;
    const double xs = x * s, ys = y * s, zs = z * s;
    const double xx = x * xs, yy = y * ys, zz = z * zs;
    const double xy = x * ys, xz = x * zs, yz = y * zs;
    const double wx = w * xs, wy = w * ys, wz = w * zs;
    m[0] = 1.0 - (yy + zz);
    m[1] = xy - wz;
    m[2] = xz + wy;
    m[3] = p.t[0];
    m[4] = xy + wz;
    m[5] = 1.0 - (xx + zz);
    m[6] = yz - wx;
    m[7] = p.t[1];
    m[8] = xz - wy;
    m[9] = yz + wx;
    m[10] = 1.0 - (xx + yy);
    m[11] = p.t[2];
    m[12] = 0.0;
    m[13] = 0.0;
    m[14] = 0.0;
    m[15] = 1.0;
}

}  // namespace tf2k
