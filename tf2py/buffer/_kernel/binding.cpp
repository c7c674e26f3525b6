// The Python binding of the kernel (nanobind): tf2py.buffer._kernel_ext. This file is the
// module's table of contents: what each header holds, then NB_MODULE, where every name the
// module exports is registered (a new binding file adds its include and one line there).
//
// The boundary (docs/kernel.md): the kernel computes, Python decides. Every entry point takes
// typed arguments (nanobind refuses anything else with a TypeError) or checks them itself, so
// no input from Python can crash the process, and returns results, error records (the
// KernelError tuple) or None for "Python must convert these arguments". No C++ code here
// calls a Python method; the only Python it calls is what Python registered for it with
// configure() (the fallbacks of the public entries, py_entry.hpp, and the constructor of
// set_transforms' result). The table of what Python calls is in tf2py/buffer/kernel.py.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <structmember.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "cdr.hpp"
#include "kernel.hpp"
#include "velocity.hpp"
#include "forward.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using tf2k::Error;
using tf2k::ErrorCode;
using tf2k::Kernel;
using tf2k::Pose;

namespace {

#include "py_values.hpp"    // Python values <-> the kernel's; error records
#include "py_messages.hpp"  // tf2py's message classes read and built through their slots
#include "py_make.hpp"      // make_transform's common form built in C++
#include "py_lock.hpp"      // the kernel's own lock (readers share it), GIL release
#include "py_kernel.hpp"    // PyKernel: the kernel, its lock, the queries
#include "py_inserts.hpp"   // single and batch inserts
#include "py_extras.hpp"    // one cache alone, and the maths, for Python
#include "py_forward.hpp"   // ForwardKinematics: a robot's batch forward kinematics (forward.hpp)
#include "py_velocity.hpp"  // lookup_velocity and lookup_velocities (maths: velocity.hpp)
#include "py_entry.hpp"     // the public lookup_transform / can_transform, their fallbacks
#include "py_method.hpp"    // those entries as methods of a store's class (StoreMethod)
#include "py_frame_ids.hpp" // a robot's frame ids for insert_cdr: admitted, named, remembered
#include "py_cdr.hpp"       // TFMessage CDR samples decoded, or inserted a round at a time

// The one configuration call (tf2py/buffer/kernel.py makes it once, before the first kernel):
// the message classes the kernel reads and builds through their slots, set_transforms'
// result type, and the functions the public entries hand what they do not answer.
void configure(nb::handle time, nb::handle duration, nb::handle header, nb::handle vector3, nb::handle quaternion,
               nb::handle transform, nb::handle stamped, nb::handle velocity_stamped, nb::handle twist,
               nb::handle batch_result, nb::handle lookup_fallback, nb::handle can_fallback, nb::handle insert_slow,
               nb::handle insert_after, nb::handle store) {
    // Everything is checked before anything is set: a refused call changes nothing.
    for (nb::handle f : {lookup_fallback, can_fallback, insert_slow, insert_after})
        if (!PyCallable_Check(f.ptr())) throw nb::type_error("configure: the fallbacks must be callables");
    if (!PyType_Check(batch_result.ptr()) ||
        !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(batch_result.ptr()), &PyTuple_Type))
        throw nb::type_error("configure: batch_result must be a tuple subclass");
    const StoreLayout layout = store_layout(store);
    slots_of(time, {"nanoseconds"});
    slots_of(duration, {"nanoseconds"});
    set_message_types(time, header, vector3, quaternion, transform, stamped);
    set_velocity_types(velocity_stamped, twist, duration);
    set_batch_result(batch_result);
    set_fallbacks(lookup_fallback, can_fallback, insert_slow, insert_after);
    set_store_layout(layout);
}

}  // namespace

NB_MODULE(_kernel_ext, m) {
    // Objects still alive when the interpreter exits (a module-level Buffer whose clock keeps
    // a jump callback, say) are not leaks of ours; nanobind's exit report of them would only
    // alarm users.
    nb::set_leak_warnings(false);
    g_main_thread = nb::cast<unsigned long>(nb::module_::import_("threading").attr("main_thread")().attr("ident"));
    // Before CPython marks itself finalizing, say so to threads inside GIL-free sections.
    nb::module_::import_("atexit").attr("register")(nb::cpp_function([] { mark_exiting(); }));
    m.def("compose", [](nb::sequence a, nb::sequence b) { return tuple_of(tf2k::compose(pose_of(a), pose_of(b))); },
          "a"_a, "b"_a, "a ∘ b of two poses (tx, ty, tz, qx, qy, qz, qw): apply b, then a.");
    m.def("inverse", [](nb::sequence a) { return tuple_of(tf2k::inverse(pose_of(a))); }, "a"_a,
          "The inverse of a pose with a unit quaternion.");
    m.def(
        "matrix",
        [](nb::sequence a) {
            double m16[16];
            tf2k::to_matrix(pose_of(a), m16);
            nb::list out;
            for (double v : m16) out.append(v);
            return out;
        },
        "a"_a, "The 4x4 homogeneous matrix of a pose, row-major, as 16 numbers.");
    m.doc() = "tf2py's compiled transform kernel (see tf2py/buffer/_kernel/).";
    m.attr("MAX_GRAPH_DEPTH") = tf2k::kMaxGraphDepth;
    m.attr("NAME_TYPE") = kNameType;
    m.attr("NOT_SIMPLE") = static_cast<int>(tf2k::kNotSimple);

    g_kernel_error = PyErr_NewException("tf2py.buffer._kernel_ext.KernelError", PyExc_Exception, nullptr);
    m.attr("KernelError") = nb::handle(g_kernel_error);
    intern_names();
    m.def("build_transform", &build_transform, "parent"_a.none(), "child"_a.none(), "translation"_a.none(),
          "rotation"_a.none(), "stamp"_a.none(),
          "make_transform's TransformStamped for plain arguments (tuples or lists of numbers, a Time\n"
          "or seconds), or None: Python then checks and converts them.");
    m.def("configure", &configure, "time"_a, "duration"_a, "header"_a, "vector3"_a, "quaternion"_a, "transform"_a,
          "stamped"_a, "velocity_stamped"_a, "twist"_a, "batch_result"_a, "lookup_fallback"_a, "can_fallback"_a,
          "insert_slow"_a, "insert_after"_a, "store"_a,
          "Register the classes the kernel builds and reads and the fallbacks of its public entries\n"
          "(tf2py/buffer/kernel.py calls it once).");

    // A store's member (BufferCore._kernel): its methods are the table in tf2py/buffer/kernel.py.
    nb::class_<PyKernel> kernel(m, "Kernel", nb::is_weak_referenceable());
    kernel.def(nb::init<int64_t, nb::handle>(), "cache_time_ns"_a, "owner"_a.none() = nb::none())
        .def("lookup", &PyKernel::lookup, "target"_a, "source"_a, "t"_a)
        .def("lookup_full", &PyKernel::lookup_full, "target"_a, "target_time"_a, "source"_a, "source_time"_a,
             "fixed"_a)
        .def("can", &PyKernel::can_transform, "target"_a, "source"_a, "t"_a)
        .def("common_time", &PyKernel::common_time, "target"_a, "source"_a)
        .def("chain", &PyKernel::chain, "target"_a, "target_time"_a, "source"_a, "source_time"_a, "fixed"_a)
        .def("lookup_many", &PyKernel::lookup_many, "target"_a, "source"_a, "ts"_a.noconvert())
        .def("lookup_many_seconds", &PyKernel::lookup_many_seconds, "target"_a, "source"_a,
             "ts"_a.noconvert())
        .def("ancestors", &PyKernel::ancestors, "frames"_a, "t"_a)
        .def("get_parent", &PyKernel::get_parent, "frame"_a, "t"_a)
        .def("exists", &PyKernel::exists, "name"_a)
        .def("frames", &PyKernel::frames)
        .def("frame_table", &PyKernel::frame_table)
        .def("samples", &PyKernel::samples, "frame"_a)
        .def("memory_bytes", &PyKernel::memory_bytes)
        .def("clear", &PyKernel::clear)
        .def("drop_static", &PyKernel::drop_static, "names"_a)
        .def("forget", &PyKernel::forget, "names"_a);
    InsertBinding::bind(kernel);
    ForwardBinding::bind(m);
    EntryBinding::bind(kernel);
    bind_store_methods(m);
    VelocityBinding::bind();
    CdrBinding::bind(m, kernel);

    nb::class_<PyTimeCache>(m, "TimeCache")
        .def(nb::init<int64_t, bool>(), "cache_time_ns"_a, "is_static"_a = false)
        .def("insert", &PyTimeCache::insert, "stamp"_a, "tx"_a, "ty"_a, "tz"_a, "qx"_a, "qy"_a, "qz"_a,
             "qw"_a, "parent"_a)
        .def("get", &PyTimeCache::get, "t"_a)
        .def("parent_at", &PyTimeCache::parent_at, "t"_a)
        .def("error", &PyTimeCache::error, "t"_a)
        .def("latest", &PyTimeCache::latest)
        .def("latest_stamp", &PyTimeCache::latest_stamp)
        .def("oldest_stamp", &PyTimeCache::oldest_stamp)
        .def("__len__", &PyTimeCache::size)
        .def_prop_ro("is_static", &PyTimeCache::is_static)
        .def("clear", &PyTimeCache::clear)
        .def("samples", &PyTimeCache::samples);
}
