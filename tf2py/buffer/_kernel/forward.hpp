// Forward kinematics of N configurations: every link's 4x4 pose, written configuration after
// configuration, each configuration's links in order (parents first), straight into the
// caller's array. Plain C++ (no Python): the binding is py_forward.hpp.
//
// The walk runs 16 configurations side by side (ForwardWalk::kBlock): each element of a pose
// is a row of 16 numbers, so every step is a loop over configurations that the compiler
// vectorises; the rest of a batch goes one configuration at a time. That layout is why the
// products live here and not in rigid.hpp, whose functions take one pose at a time.
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

// Poses of a block of W configurations side by side ("structure of arrays"): element e of
// the 3x4 [R | t] (row-major, e = 4·row + column) of configuration b at [e·W + b], so each
// step below is loops over b the compiler vectorises.
// child = parent · (r, t), r and t the same for the block (Vary false: r[e], t[e]) or one per
// configuration (Vary true: r[e·W + b], t[e·W + b]).
template <size_t W, bool VaryR, bool VaryT>
inline void block_step(const double* __restrict__ p, const double* __restrict__ r, const double* __restrict__ t,
                       double* __restrict__ out) {
    auto rot = [r](int i, int j, size_t b) { return VaryR ? r[(3 * i + j) * W + b] : r[3 * i + j]; };
    auto move = [t](int i, size_t b) { return VaryT ? t[i * W + b] : t[i]; };
    for (int i = 0; i < 3; ++i) {
        const double* p0 = p + (4 * i) * W;
        const double* p1 = p0 + W;
        const double* p2 = p1 + W;
        const double* p3 = p2 + W;
        for (int j = 0; j < 3; ++j) {
            double* o = out + (4 * i + j) * W;
            for (size_t b = 0; b < W; ++b) o[b] = p0[b] * rot(0, j, b) + p1[b] * rot(1, j, b) + p2[b] * rot(2, j, b);
        }
        double* o = out + (4 * i + 3) * W;
        for (size_t b = 0; b < W; ++b) o[b] = p0[b] * move(0, b) + p1[b] * move(1, b) + p2[b] * move(2, b) + p3[b];
    }
}

// Configuration b of a block into a row-major 4x4.
template <size_t W>
inline void block_matrix(const double* h, size_t b, double* out) {
    for (int e = 0; e < 12; ++e) out[e] = h[e * W + b];
    out[12] = 0.0;
    out[13] = 0.0;
    out[14] = 0.0;
    out[15] = 1.0;
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
    static constexpr size_t kBlock = 16;  // configurations walked side by side

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
        // Angles of a block's configurations, the walk of the whole block, then its poses
        // written out. Whole blocks of kBlock first, then the rest (a single configuration,
        // say) one by one, so that no walk runs for configurations that are not there.
        std::vector<double> theta(m * kBlock, 0.0), sines(m * kBlock), cosines(m * kBlock);
        std::vector<double> walk(12 * kBlock * links_.size());
        if (select == nullptr) count = links_.size();
        Block block{positions, out, select, count, base, theta.data(), sines.data(), cosines.data(), walk.data()};
        const size_t whole = n - n % kBlock;
        for (size_t start = 0; start < whole; start += kBlock) run<kBlock>(block, start);
        for (size_t start = whole; start < n; ++start) run<1>(block, start);
    }

  private:
    struct Block {
        const double* positions;
        double* out;
        const int64_t* select;
        size_t count;
        int64_t base;
        double *theta, *sines, *cosines, *walk;
    };

    // W configurations from `start`: their angles, their walk, their poses into out.
    template <size_t W>
    void run(const Block& k, size_t start) const {
        const size_t m = drives_.size();
        for (size_t j = 0; j < m; ++j) {
            const ForwardDrive& d = drives_[j];
            const double* column = k.positions + start * dof_ + static_cast<size_t>(d.source);
            double* row = k.theta + j * W;
            for (size_t i = 0; i < W; ++i) row[i] = d.multiplier * column[i * dof_] + d.offset;
            if (d.turning) sin_cos_many(row, W, k.sines + j * W, k.cosines + j * W);
        }
        walk_block<W>(k.walk, k.theta, k.sines, k.cosines);
        for (size_t i = 0; i < W; ++i) {
            double* target = k.out + (start + i) * 16 * k.count;
            double from[16];
            if (k.base >= 0) block_matrix<W>(k.walk + 12 * W * static_cast<size_t>(k.base), i, from);
            for (size_t c = 0; c < k.count; ++c) {
                const size_t l = k.select == nullptr ? c : static_cast<size_t>(k.select[c]);
                const double* h = k.walk + 12 * W * l;
                if (k.base < 0) {
                    block_matrix<W>(h, i, target + 16 * c);
                } else {
                    double pose[16];
                    block_matrix<W>(h, i, pose);
                    relative_pose(from, pose, target + 16 * c);
                }
            }
        }
    }

    // The poses of W configurations into h (L blocks of 12·W); their angles at stride W.
    template <size_t W>
    void walk_block(double* h, const double* theta, const double* sines, const double* cosines) const {
        const size_t links = links_.size();
        for (size_t l = 0; l < links; ++l) {
            const ForwardLink& k = links_[l];
            double* pose = h + 12 * W * l;
            if (k.parent < 0) {
                for (int e = 0; e < 12; ++e) std::fill(pose + e * W, pose + (e + 1) * W, e % 5 == 0 ? 1.0 : 0.0);
                continue;
            }
            const double* parent = h + 12 * W * static_cast<size_t>(k.parent);
            const size_t row = k.moving < 0 ? 0 : static_cast<size_t>(k.moving) * W;
            switch (k.motion) {
                case JointMotion::Turning: {
                    double r[9 * W];
                    const double* c = cosines + row;
                    const double* s = sines + row;
                    if (k.column_i >= 0) {
                        const int i = k.column_i, j = k.column_j;
                        const int still = 3 - i - j;
                        for (int r3 = 0; r3 < 9; r3 += 3) {
                            const double oi = k.rotation[r3 + i], oj = k.rotation[r3 + j];
                            const double si = k.sign * oi, sj = k.sign * oj;
                            double* ri = r + (r3 + i) * W;
                            double* rj = r + (r3 + j) * W;
                            for (size_t b = 0; b < W; ++b) {
                                ri[b] = c[b] * oi + s[b] * sj;
                                rj[b] = c[b] * oj - s[b] * si;
                            }
                            std::fill(r + (r3 + still) * W, r + (r3 + still + 1) * W, k.rotation[r3 + still]);
                        }
                    } else {
                        for (int e = 0; e < 9; ++e) {
                            for (size_t b = 0; b < W; ++b) r[e * W + b] = k.m2[e] + c[b] * k.m0[e] + s[b] * k.m1[e];
                        }
                    }
                    block_step<W, true, false>(parent, r, k.translation, pose);
                    break;
                }
                case JointMotion::Sliding: {
                    double t[3 * W];
                    const double* v = theta + row;
                    for (int e = 0; e < 3; ++e) {
                        for (size_t b = 0; b < W; ++b) t[e * W + b] = k.translation[e] + v[b] * k.direction[e];
                    }
                    block_step<W, false, true>(parent, k.rotation, t, pose);
                    break;
                }
                default:
                    block_step<W, false, false>(parent, k.rotation, k.translation, pose);
            }
        }
    }

    std::vector<ForwardLink> links_;
    std::vector<ForwardDrive> drives_;
    size_t dof_;
};

}  // namespace tf2k
