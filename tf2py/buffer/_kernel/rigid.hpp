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

// The rotation matrix of a quaternion, row-major 3x3: tf2's Matrix3x3::setRotation,
// operation for operation (scale 2/|q|²).
inline void basis_of(const double* q, double* m) {
    const double x = q[0], y = q[1], z = q[2], w = q[3];
    const double n = x * x + y * y + z * z + w * w;
    const double s = n > 0.0 ? 2.0 / n : 0.0;
    const double xs = x * s, ys = y * s, zs = z * s;
    const double xx = x * xs, yy = y * ys, zz = z * zs;
    const double xy = x * ys, xz = x * zs, yz = y * zs;
    const double wx = w * xs, wy = w * ys, wz = w * zs;
    m[0] = 1.0 - (yy + zz);
    m[1] = xy - wz;
    m[2] = xz + wy;
    m[3] = xy + wz;
    m[4] = 1.0 - (xx + zz);
    m[5] = yz - wx;
    m[6] = xz - wy;
    m[7] = yz + wx;
    m[8] = 1.0 - (xx + yy);
}

// Row-major 4x4 homogeneous matrix.
inline void to_matrix(const Pose& p, double* m) {
    double b[9];
    basis_of(p.q, b);
    for (int r = 0; r < 3; ++r) {
        m[4 * r] = b[3 * r];
        m[4 * r + 1] = b[3 * r + 1];
        m[4 * r + 2] = b[3 * r + 2];
        m[4 * r + 3] = p.t[r];
    }
    m[12] = 0.0;
    m[13] = 0.0;
    m[14] = 0.0;
    m[15] = 1.0;
}

// v rotated by the unit quaternion q.
inline void rotate(const double* q, const double* v, double* out) {
    const Pose turned = compose(Pose{{0.0, 0.0, 0.0}, {q[0], q[1], q[2], q[3]}}, Pose{{v[0], v[1], v[2]}, {0.0, 0.0, 0.0, 1.0}});
    out[0] = turned.t[0];
    out[1] = turned.t[1];
    out[2] = turned.t[2];
}

// The rotation from a to b in a's axes, conj(a) b, written so that a == b gives exactly the
// identity (the products cancel pairwise: no rounding residue to divide by a short interval).
inline void relative_rotation(const double* a, const double* b, double* out) {
    out[0] = (a[3] * b[0] - b[3] * a[0]) - (a[1] * b[2] - a[2] * b[1]);
    out[1] = (a[3] * b[1] - b[3] * a[1]) - (a[2] * b[0] - a[0] * b[2]);
    out[2] = (a[3] * b[2] - b[3] * a[2]) - (a[0] * b[1] - a[1] * b[0]);
    out[3] = a[3] * b[3] + a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

// The rotation vector (axis times angle, radians, the angle in [0, pi]) of a unit quaternion.
inline void rotation_vector(const double* q, double* out) {
    const double sign = q[3] < 0.0 ? -1.0 : 1.0;  // q and -q: one rotation; the short way
    const double x = sign * q[0], y = sign * q[1], z = sign * q[2], w = sign * q[3];
    const double n = std::sqrt(x * x + y * y + z * z);
    // angle = 2 atan2(n, w); axis = (x, y, z) / n; near n = 0 the ratio tends to 2 / w.
    const double scale = n > 0.0 ? 2.0 * std::atan2(n, w) / n : (w > 0.0 ? 2.0 / w : 0.0);
    out[0] = x * scale;
    out[1] = y * scale;
    out[2] = z * scale;
}

// ---- tf2's LinearMath on 3x3 matrices (row-major) and vectors, operation for operation
// (tf2/LinearMath/Matrix3x3.h, Quaternion.h, Vector3.h): what lookup_velocity's
// tf2_compatible answer is computed with, so that it rounds as tf2 does.

// Matrix3x3 * Vector3: each row dotted with v.
inline void basis_apply(const double* m, const double* v, double* out) {
    out[0] = m[0] * v[0] + m[1] * v[1] + m[2] * v[2];
    out[1] = m[3] * v[0] + m[4] * v[1] + m[5] * v[2];
    out[2] = m[6] * v[0] + m[7] * v[1] + m[8] * v[2];
}

// Matrix3x3 * Matrix3x3.
inline void basis_product(const double* a, const double* b, double* out) {
    for (int r = 0; r < 3; ++r) {
        for (int c = 0; c < 3; ++c) out[3 * r + c] = a[3 * r] * b[c] + a[3 * r + 1] * b[3 + c] + a[3 * r + 2] * b[6 + c];
    }
}

// Matrix3x3::inverse: cofactors over the determinant (not the transpose).
inline void basis_inverse(const double* m, double* out) {
    auto cofac = [m](int r1, int c1, int r2, int c2) { return m[3 * r1 + c1] * m[3 * r2 + c2] - m[3 * r1 + c2] * m[3 * r2 + c1]; };
    const double co0 = cofac(1, 1, 2, 2), co1 = cofac(1, 2, 2, 0), co2 = cofac(1, 0, 2, 1);
    const double s = 1.0 / (m[0] * co0 + m[1] * co1 + m[2] * co2);
    out[0] = co0 * s;
    out[1] = cofac(0, 2, 2, 1) * s;
    out[2] = cofac(0, 1, 1, 2) * s;
    out[3] = co1 * s;
    out[4] = cofac(0, 0, 2, 2) * s;
    out[5] = cofac(0, 2, 1, 0) * s;
    out[6] = co2 * s;
    out[7] = cofac(0, 1, 2, 0) * s;
    out[8] = cofac(0, 0, 1, 1) * s;
}

// Matrix3x3::getRotation (Shepperd's method): the quaternion (x, y, z, w) of a matrix.
inline void basis_rotation(const double* m, double* q) {
    const double trace = m[0] + m[4] + m[8];
    if (trace > 0.0) {
        double s = std::sqrt(trace + 1.0);
        q[3] = s * 0.5;
        s = 0.5 / s;
        q[0] = (m[7] - m[5]) * s;
        q[1] = (m[2] - m[6]) * s;
        q[2] = (m[3] - m[1]) * s;
        return;
    }
    const int i = m[0] < m[4] ? (m[4] < m[8] ? 2 : 1) : (m[0] < m[8] ? 2 : 0);
    const int j = (i + 1) % 3;
    const int k = (i + 2) % 3;
    double s = std::sqrt(m[4 * i] - m[4 * j] - m[4 * k] + 1.0);
    q[i] = s * 0.5;
    s = 0.5 / s;
    q[3] = (m[3 * k + j] - m[3 * j + k]) * s;
    q[j] = (m[3 * j + i] + m[3 * i + j]) * s;
    q[k] = (m[3 * k + i] + m[3 * i + k]) * s;
}

// Quaternion::getAxis and getAngle: angle = 2 acos(w) (w clamped to [-1, 1]: in [0, 2 pi]);
// the axis (1, 0, 0) when 1 - w² < 10 DBL_EPSILON (tf2's guard against dividing by zero).
inline void axis_angle(const double* q, double* axis, double& angle) {
    const double w = q[3];
    angle = 2.0 * std::acos(w < -1.0 ? -1.0 : (w > 1.0 ? 1.0 : w));
    const double s_squared = 1.0 - w * w;  // tf2Pow(w, 2.0): exact, as w * w
    if (s_squared < 10.0 * 2.220446049250313e-16) {
        axis[0] = 1.0;
        axis[1] = 0.0;
        axis[2] = 0.0;
        return;
    }
    const double s = std::sqrt(s_squared);
    axis[0] = q[0] / s;
    axis[1] = q[1] / s;
    axis[2] = q[2] / s;
}

}  // namespace tf2k
