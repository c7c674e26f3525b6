// ForwardKinematics for Python (the walk: forward.hpp): part of the binding (binding.cpp
// includes it once, inside its anonymous namespace, and forward.hpp before that namespace;
// ForwardBinding::bind(m) registers it).
//
// tf2py/robot/kinematics.py builds one per robot from the tables it computes, then calls
// poses / poses_of with (N, dof) configurations and an (N, L, 4, 4) array it allocated. Every
// table and every argument is checked here (shapes, dtypes, indices, finite numbers, unit
// axes, no overlap of the input and output), so no input from Python can make the walk read
// or write outside its arrays. Positions are not checked for finiteness (tf2py's Python does,
// with a message naming the joint): a NaN or infinite position gives NaN poses, nothing more.
#pragma once

using Float64Array1 = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using Float64Array2 = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Float64Array3 = nb::ndarray<const double, nb::ndim<3>, nb::c_contig, nb::device::cpu>;
using PosesArray = nb::ndarray<double, nb::ndim<4>, nb::c_contig, nb::device::cpu>;

class PyForward {
  public:
    PyForward(Int64Array parents, Float64Array3 origins, Int64Array motions, Float64Array2 axes, Int64Array sources,
              Float64Array1 multipliers, Float64Array1 offsets, int64_t dof)
        : walk_(build(parents, origins, motions, axes, sources, multipliers, offsets, dof)) {}

    // Every link's pose in the root: positions (N, dof) -> out (N, L, 4, 4).
    void poses(Float64Array2 positions, PosesArray out) const {
        const size_t n = check_positions(positions);
        check_out(out, n, walk_.link_count(), positions);
        WithoutGil nogil(n >= kReleaseGilRows);
        walk_.poses(positions.data(), n, out.data(), nullptr, 0, -1);
    }

    // The poses of links (K indices) in link base (-1: the root): out (N, K, 4, 4).
    void poses_of(Float64Array2 positions, PosesArray out, Int64Array links, int64_t base) const {
        const size_t n = check_positions(positions);
        const int64_t count = static_cast<int64_t>(walk_.link_count());
        const size_t k = links.shape(0);
        for (size_t i = 0; i < k; ++i) {
            if (links.data()[i] < 0 || links.data()[i] >= count) throw nb::index_error("links: index out of range");
        }
        if (base < -1 || base >= count) throw nb::index_error("base: index out of range");
        check_out(out, n, k, positions);
        WithoutGil nogil(n >= kReleaseGilRows);
        walk_.poses(positions.data(), n, out.data(), links.data(), k, base);
    }

    size_t link_count() const { return walk_.link_count(); }
    size_t dof() const { return walk_.dof(); }

  private:
    static bool finite(const double* v, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            if (!std::isfinite(v[i])) return false;
        }
        return true;
    }

    static tf2k::ForwardWalk build(Int64Array parents, Float64Array3 origins, Int64Array motions, Float64Array2 axes,
                                   Int64Array sources, Float64Array1 multipliers, Float64Array1 offsets,
                                   int64_t dof) {
        const size_t links = parents.shape(0);
        if (links == 0) throw nb::value_error("a robot needs at least one link");
        if (dof < 0) throw nb::value_error("dof must not be negative");
        if (origins.shape(0) != links || origins.shape(1) != 3 || origins.shape(2) != 4 || motions.shape(0) != links ||
            axes.shape(0) != links || axes.shape(1) != 3 || sources.shape(0) != links ||
            multipliers.shape(0) != links || offsets.shape(0) != links) {
            throw nb::value_error("tables must be parents (L,), origins (L, 3, 4), motions (L,), axes (L, 3), "
                                  "sources (L,), multipliers (L,), offsets (L,)");
        }
        std::vector<tf2k::ForwardLink> table(links);
        std::vector<tf2k::ForwardDrive> drives;
        for (size_t l = 0; l < links; ++l) {
            tf2k::ForwardLink& link = table[l];
            const int64_t parent = parents.data()[l];
            if (parent < -1 || parent >= static_cast<int64_t>(l))
                throw nb::value_error("parents: each must be -1 or an earlier link");
            link.parent = static_cast<int32_t>(parent);
            const double* origin = origins.data() + 12 * l;
            if (!finite(origin, 12)) throw nb::value_error("origins must be finite");
            for (int i = 0; i < 3; ++i) {
                for (int j = 0; j < 3; ++j) link.rotation[3 * i + j] = origin[4 * i + j];
                link.translation[i] = origin[4 * i + 3];
            }
            const int64_t motion = motions.data()[l];
            if (motion < 0 || motion > 2) throw nb::value_error("motions: 0 still, 1 turning, 2 sliding");
            link.motion = static_cast<tf2k::JointMotion>(motion);
            if (link.motion == tf2k::JointMotion::Still || parent < 0) {
                link.motion = tf2k::JointMotion::Still;
                continue;
            }
            const double* axis = axes.data() + 3 * l;
            const double norm = axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2];
            if (!finite(axis, 3) || !(std::fabs(norm - 1.0) <= 1e-9)) throw nb::value_error("axes must be unit vectors");
            const int64_t source = sources.data()[l];
            if (source < 0 || source >= dof) throw nb::value_error("sources: index out of range");
            const double multiplier = multipliers.data()[l], offset = offsets.data()[l];
            if (!std::isfinite(multiplier) || !std::isfinite(offset))
                throw nb::value_error("multipliers and offsets must be finite");
            const bool turning = link.motion == tf2k::JointMotion::Turning;
            if (turning) {
                tf2k::ForwardWalk::set_turning(link, axis);
            } else {
                tf2k::ForwardWalk::set_sliding(link, axis);
            }
            link.moving = static_cast<int32_t>(drives.size());
            drives.push_back(tf2k::ForwardDrive{source, multiplier, offset, turning});
        }
        return tf2k::ForwardWalk(std::move(table), std::move(drives), static_cast<size_t>(dof));
    }

    size_t check_positions(const Float64Array2& positions) const {
        if (positions.shape(1) != walk_.dof()) throw nb::value_error("positions must be (N, dof)");
        return positions.shape(0);
    }

    static void check_out(const PosesArray& out, size_t n, size_t k, const Float64Array2& positions) {
        if (out.shape(0) != n || out.shape(1) != k || out.shape(2) != 4 || out.shape(3) != 4)
            throw nb::value_error("out must be (N, K, 4, 4) for N configurations and K links");
        // The walk reads a block of positions after writing earlier poses: the two must not
        // share memory.
        const auto* in_begin = reinterpret_cast<const char*>(positions.data());
        const char* in_end = in_begin + positions.nbytes();
        const auto* out_begin = reinterpret_cast<const char*>(out.data());
        const char* out_end = out_begin + out.nbytes();
        if (positions.nbytes() > 0 && out.nbytes() > 0 && in_begin < out_end && out_begin < in_end)
            throw nb::value_error("out must not share memory with positions");
    }

    tf2k::ForwardWalk walk_;
};

struct ForwardBinding {
    static void bind(nb::module_& m) {
        nb::class_<PyForward>(m, "ForwardKinematics")
            .def(nb::init<Int64Array, Float64Array3, Int64Array, Float64Array2, Int64Array, Float64Array1,
                          Float64Array1, int64_t>(),
                 "parents"_a.noconvert(), "origins"_a.noconvert(), "motions"_a.noconvert(), "axes"_a.noconvert(),
                 "sources"_a.noconvert(), "multipliers"_a.noconvert(), "offsets"_a.noconvert(), "dof"_a,
                 "The forward kinematics walk of one robot: per link (parents first) its parent's index\n"
                 "(-1: a root), its joint's origin (3, 4) [R | t], motion (0 still, 1 turning, 2 sliding),\n"
                 "unit axis, and the configuration column driving it (times multiplier, plus offset).\n"
                 "int64 and float64 C-contiguous arrays, checked; ValueError if not.")
            .def("poses", &PyForward::poses, "positions"_a.noconvert(), "out"_a.noconvert(),
                 "Every link's 4x4 pose in the root (metres) for positions (N, dof) into out (N, L, 4, 4).\n"
                 "Without the GIL for 64 configurations or more. Non-finite positions give NaN poses.")
            .def("poses_of", &PyForward::poses_of, "positions"_a.noconvert(), "out"_a.noconvert(),
                 "links"_a.noconvert(), "base"_a,
                 "The poses of links (int64 indices) in link base (-1: the root) into out (N, K, 4, 4).")
            .def_prop_ro("link_count", &PyForward::link_count)
            .def_prop_ro("dof", &PyForward::dof);
    }
};
