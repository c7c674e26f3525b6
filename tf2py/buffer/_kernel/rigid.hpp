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

// tf2's slerp (LinearMath/Quaternion.h): shortest path (the second quaternion negated when
// the dot product is negative); the first quaternion when the angle is zero; no
// re-normalisation.
inline void slerp(const double* a, const double* b, double ratio, double* out) {
    double bx = b[0], by = b[1], bz = b[2], bw = b[3];
    double dot = a[0] * bx + a[1] * by + a[2] * bz + a[3] * bw;
    if (dot < 0.0) {
        dot = -dot;
        bx = -bx;
        by = -by;
        bz = -bz;
        bw = -bw;
    }
    if (dot < 1.0) {
        const double theta = std::acos(dot);
        const double d = 1.0 / std::sin(theta);
        const double s0 = std::sin((1.0 - ratio) * theta) * d;
        const double s1 = std::sin(ratio * theta) * d;
        out[0] = a[0] * s0 + bx * s1;
        out[1] = a[1] * s0 + by * s1;
        out[2] = a[2] * s0 + bz * s1;
        out[3] = a[3] * s0 + bw * s1;
    } else {
        out[0] = a[0];
        out[1] = a[1];
        out[2] = a[2];
        out[3] = a[3];
    }
}

// Linear translation, slerped rotation between a (ratio 0) and b (ratio 1).
inline Pose interpolate(const double* a, const double* b, double ratio) {
    Pose out;
    const double r0 = 1.0 - ratio;
    out.t[0] = r0 * a[0] + ratio * b[0];
    out.t[1] = r0 * a[1] + ratio * b[1];
    out.t[2] = r0 * a[2] + ratio * b[2];
    slerp(a + 3, b + 3, ratio, out.q);
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
