// Forward kinematics of N configurations: every link's 4x4 pose, one configuration after the
// other, each configuration's links in order (parents first), straight into the caller's
// array. Plain C++ (no Python): the binding is py_forward.hpp.
//
// A link's pose is its parent's pose times its joint's local transform: the joint's origin
// (R_o, t_o), then its motion. Turning (revolute, continuous) about the unit axis a by θ:
// R_o·Rot(a, θ) = M2 + cos θ·M0 + sin θ·M1 with M2 = (R_o·a)·aᵀ, M0 = R_o − M2 and
// M1 = R_o·[a]×, fixed per joint (Rodrigues' formula with the origin folded in). Sliding
// (prismatic) by θ along a: t_o + θ·(R_o·a). Still joints (fixed, floating, planar, undriven)
// are their origin. A moving joint's θ is `multiplier · positions[source] + offset` (1 and 0
// for a driven joint, the master's column for a mimic).
//
// Frames: pose T of a link maps coordinates in the link into the root (or into the base link
// with `base`); matrices row-major, metres.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tf2k {

enum class JointMotion : int32_t { Still = 0, Turning = 1, Sliding = 2 };

// One link of the walk. Rotations row-major 3x3.
struct ForwardLink {
    int32_t parent = -1;  // an earlier link, or -1: a root, whose pose is the identity
    JointMotion motion = JointMotion::Still;
    int32_t moving = -1;  // the joint's row in the moving joints' arrays (-1: still)
    double rotation[9] = {};  // R_o (still, sliding)
    double translation[3] = {};  // t_o
    double m0[9] = {}, m1[9] = {}, m2[9] = {};  // turning: see the top of this file
    // Turning about ±x, ±y or ±z (most joints): only columns i and j of R_o change, into
    // cos θ·o_i + sign·sin θ·o_j and cos θ·o_j − sign·sin θ·o_i (i = -1: any other axis).
    int32_t column_i = -1, column_j = -1;
    double sign = 1.0;
    double direction[3] = {};  // sliding: R_o·a
};

// How a moving joint follows the configuration's columns.
struct ForwardDrive {
    int64_t source = 0;
    double multiplier = 1.0;
    double offset = 0.0;
    bool turning = false;
};

// sin and cos of n angles, written so that the compiler vectorises the loop (no branch, no
// integer): Cody-Waite reduction by π/2 in two parts (musl's __rem_pio2 first round, good to
// about 85 bits for |x| <= 1e5), fdlibm's polynomials on [-π/4, π/4] (error below 2^-58),
// then the turn by the quadrant, sin(r + qπ/2) = sin r·A + cos r·B with (A, B) = (cos qπ/2,
// sin qπ/2) in {0, ±1}: exact. Angles beyond ±1e5 rad and non-finite ones are left to libm.
inline void sin_cos_many(const double* x, size_t n, double* s, double* c) {
    constexpr double kInvPio2 = 6.36619772367581382433e-01;
    constexpr double kPio2Hi = 1.57079632673412561417e+00;  // first 33 bits of π/2
    constexpr double kPio2Lo = 6.07710050650619224932e-11;  // π/2 − kPio2Hi
    constexpr double kToInt = 6755399441055744.0;  // 1.5·2^52: adding it rounds to an integer
    constexpr double S1 = -1.66666666666666324348e-01, S2 = 8.33333333332248946124e-03,
                     S3 = -1.98412698298579493134e-04, S4 = 2.75573137070700676789e-06,
                     S5 = -2.50507602534068634195e-08, S6 = 1.58969099521155010221e-10;
    constexpr double C1 = 4.16666666666666019037e-02, C2 = -1.38888888888741095749e-03,
                     C3 = 2.48015872894767294178e-05, C4 = -2.75573143513906633035e-07,
                     C5 = 2.08757232129817482790e-09, C6 = -1.13596475577881948265e-11;
    // s holds the angles the loop below reduces (a loop with a choice in it is not vectorised).
    for (size_t i = 0; i < n; ++i) s[i] = std::fabs(x[i]) <= 1e5 ? x[i] : 0.0;  // NaN: 0, libm below
    for (size_t i = 0; i < n; ++i) {
        const double v = s[i];
        const double k = (v * kInvPio2 + kToInt) - kToInt;
        const double r = (v - k * kPio2Hi) - k * kPio2Lo;
        const double z = r * r;
        const double w = z * z;
        const double ps = S2 + z * (S3 + z * S4) + z * w * (S5 + z * S6);
        const double sr = r + z * r * (S1 + z * ps);
        const double pc = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6));
        const double hz = 0.5 * z;
        const double one = 1.0 - hz;
        const double cr = one + (((1.0 - one) - hz) + z * pc);
        // q = k mod 4 in {-2, -1, 0, 1, 2}; A and B are polynomials in q, exact on integers.
        const double q = k - 4.0 * ((k * 0.25 + kToInt) - kToInt);
        const double u = q * q;
        const double a = (6.0 - 7.0 * u + u * u) / 6.0;
        const double b = q * (4.0 - u) / 3.0;
        s[i] = sr * a + cr * b;
        c[i] = cr * a - sr * b;
    }
    for (size_t i = 0; i < n; ++i) {
        if (!(std::fabs(x[i]) <= 1e5)) {
            s[i] = std::sin(x[i]);
            c[i] = std::cos(x[i]);
        }
    }
}

// child = parent · (r, t): 3x4 products on row-major 4x4 poses; the last row written 0 0 0 1.
inline void forward_step(const double* p, const double* r, const double* t, double* out) {
    for (int i = 0; i < 3; ++i) {
        const double a = p[4 * i], b = p[4 * i + 1], c = p[4 * i + 2];
        out[4 * i] = a * r[0] + b * r[3] + c * r[6];
        out[4 * i + 1] = a * r[1] + b * r[4] + c * r[7];
        out[4 * i + 2] = a * r[2] + b * r[5] + c * r[8];
        out[4 * i + 3] = a * t[0] + b * t[1] + c * t[2] + p[4 * i + 3];
    }
    out[12] = 0.0;
    out[13] = 0.0;
    out[14] = 0.0;
    out[15] = 1.0;
}

inline void identity_matrix(double* out) {
    for (int i = 0; i < 16; ++i) out[i] = (i % 5 == 0) ? 1.0 : 0.0;
}

// T_b⁻¹·T = [R_bᵀ·R | R_bᵀ·(t − t_b)] of two row-major 4x4 poses.
inline void relative_pose(const double* b, const double* t, double* out) {
    const double d[3] = {t[3] - b[3], t[7] - b[7], t[11] - b[11]};
    for (int i = 0; i < 3; ++i) {
        const double x = b[i], y = b[4 + i], z = b[8 + i];  // column i of R_b: row i of R_bᵀ
        out[4 * i] = x * t[0] + y * t[4] + z * t[8];
        out[4 * i + 1] = x * t[1] + y * t[5] + z * t[9];
        out[4 * i + 2] = x * t[2] + y * t[6] + z * t[10];
        out[4 * i + 3] = x * d[0] + y * d[1] + z * d[2];
    }
    out[12] = 0.0;
    out[13] = 0.0;
    out[14] = 0.0;
    out[15] = 1.0;
}

// The walk of one robot: built once from checked tables (py_forward.hpp checks them), then
// run for any number of configurations. Const after construction: concurrent runs share it.
class ForwardWalk {
  public:
    static constexpr size_t kBlock = 64;  // configurations whose angles are taken at once

    ForwardWalk(std::vector<ForwardLink> links, std::vector<ForwardDrive> drives, size_t dof)
        : links_(std::move(links)), drives_(std::move(drives)), dof_(dof) {}

    // Fills the turning parts of a link from its origin rotation and unit axis.
    static void set_turning(ForwardLink& link, const double* axis) {
        const double* r = link.rotation;
        const double ra[3] = {r[0] * axis[0] + r[1] * axis[1] + r[2] * axis[2],
                              r[3] * axis[0] + r[4] * axis[1] + r[5] * axis[2],
                              r[6] * axis[0] + r[7] * axis[1] + r[8] * axis[2]};
        const double cross[9] = {0.0, -axis[2], axis[1], axis[2], 0.0, -axis[0], -axis[1], axis[0], 0.0};
        for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < 3; ++j) {
                link.m2[3 * i + j] = ra[i] * axis[j];
                link.m0[3 * i + j] = r[3 * i + j] - link.m2[3 * i + j];
                link.m1[3 * i + j] = r[3 * i] * cross[j] + r[3 * i + 1] * cross[3 + j] + r[3 * i + 2] * cross[6 + j];
            }
        }
        for (int e = 0; e < 3; ++e) {  // about axis e, columns e+1 and e+2 (mod 3) turn
            const double a = axis[e], b = axis[(e + 1) % 3], c = axis[(e + 2) % 3];
            if ((a == 1.0 || a == -1.0) && b == 0.0 && c == 0.0) {
                link.column_i = (e + 1) % 3;
                link.column_j = (e + 2) % 3;
                link.sign = a;
            }
        }
    }

    static void set_sliding(ForwardLink& link, const double* axis) {
        const double* r = link.rotation;
        for (int i = 0; i < 3; ++i) link.direction[i] = r[3 * i] * axis[0] + r[3 * i + 1] * axis[1] + r[3 * i + 2] * axis[2];
    }

    size_t link_count() const { return links_.size(); }
    size_t dof() const { return dof_; }

    // Poses of n configurations `positions (n, dof)` into `out`: with select == nullptr and
    // base < 0, every link in the root, (n, L, 4, 4); otherwise the `count` links of `select`
    // (indices below L) in link `base` (or the root when base < 0), (n, count, 4, 4).
    void poses(const double* positions, size_t n, double* out, const int64_t* select, size_t count,
               int64_t base) const {
        const size_t m = drives_.size();
        const size_t links = links_.size();
        std::vector<double> theta(m * kBlock), sines(m * kBlock), cosines(m * kBlock);
        const bool direct = select == nullptr && base < 0;
        std::vector<double> walk(direct ? 0 : 16 * links);
        const size_t per = 16 * (select == nullptr ? links : count);
        for (size_t start = 0; start < n; start += kBlock) {
            const size_t b = std::min(kBlock, n - start);
            for (size_t j = 0; j < m; ++j) {
                const ForwardDrive& d = drives_[j];
                const double* column = positions + start * dof_ + static_cast<size_t>(d.source);
                double* row = theta.data() + j * kBlock;
                for (size_t i = 0; i < b; ++i) row[i] = d.multiplier * column[i * dof_] + d.offset;
                if (d.turning) sin_cos_many(row, b, sines.data() + j * kBlock, cosines.data() + j * kBlock);
            }
            for (size_t i = 0; i < b; ++i) {
                double* target = out + (start + i) * per;
                double* h = direct ? target : walk.data();
                walk_one(h, theta.data() + i, sines.data() + i, cosines.data() + i);
                if (direct) continue;
                const double* from = h + (base < 0 ? 0 : 16 * static_cast<size_t>(base));
                for (size_t k = 0; k < (select == nullptr ? links : count); ++k) {
                    const double* pose = h + 16 * (select == nullptr ? k : static_cast<size_t>(select[k]));
                    if (base < 0) {
                        std::copy(pose, pose + 16, target + 16 * k);
                    } else {
                        relative_pose(from, pose, target + 16 * k);
                    }
                }
            }
        }
    }

  private:
    // One configuration's poses into h (L, 4, 4); its angles at stride kBlock.
    void walk_one(double* h, const double* theta, const double* sines, const double* cosines) const {
        const size_t links = links_.size();
        for (size_t l = 0; l < links; ++l) {
            const ForwardLink& k = links_[l];
            double* pose = h + 16 * l;
            if (k.parent < 0) {
                identity_matrix(pose);
                continue;
            }
            const double* parent = h + 16 * static_cast<size_t>(k.parent);
            const size_t row = k.moving < 0 ? 0 : static_cast<size_t>(k.moving) * kBlock;
            switch (k.motion) {
                case JointMotion::Turning: {
                    const double c = cosines[row];
                    double r[9];
                    if (k.column_i >= 0) {
                        const double s = k.sign * sines[row];
                        const int i = k.column_i, j = k.column_j;
                        for (int e = 0; e < 9; ++e) r[e] = k.rotation[e];
                        for (int row3 = 0; row3 < 9; row3 += 3) {
                            r[row3 + i] = c * k.rotation[row3 + i] + s * k.rotation[row3 + j];
                            r[row3 + j] = c * k.rotation[row3 + j] - s * k.rotation[row3 + i];
                        }
                    } else {
                        const double s = sines[row];
                        for (int e = 0; e < 9; ++e) r[e] = k.m2[e] + c * k.m0[e] + s * k.m1[e];
                    }
                    forward_step(parent, r, k.translation, pose);
                    break;
                }
                case JointMotion::Sliding: {
                    const double v = theta[row];
                    const double t[3] = {k.translation[0] + v * k.direction[0], k.translation[1] + v * k.direction[1],
                                         k.translation[2] + v * k.direction[2]};
                    forward_step(parent, k.rotation, t, pose);
                    break;
                }
                default:
                    forward_step(parent, k.rotation, k.translation, pose);
            }
        }
    }

    std::vector<ForwardLink> links_;
    std::vector<ForwardDrive> drives_;
    size_t dof_;
};

}  // namespace tf2k
