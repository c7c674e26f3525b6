// The Python binding of the kernel (nanobind): tf2py.buffer._kernel_ext.
//
// Every entry point takes typed arguments (nanobind refuses anything else with a
// TypeError) and checks ids, shapes and sizes itself: no input from Python can crash the
// process. Failures of a query are not raised here: the call returns None and error()
// describes it, so that Python raises tf2's exception with tf2's wording.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <structmember.h>

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <cstring>
#include <string>
#include <vector>

#include "kernel.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using tf2k::Error;
using tf2k::ErrorCode;
using tf2k::Kernel;
using tf2k::Pose;

namespace {

constexpr int kNameType = -7;  // a frame id that is not a str (batch rows)
// tf2k::kNotSimple: an argument that is not a plain str / int / float; Python checks it
// (and names the problem) on its slow path.

// A float or int argument as a double; false for anything else (arrays, strings...).
bool plain_double(nb::handle h, double& out) {
    PyObject* o = h.ptr();
    if (PyFloat_Check(o)) {
        out = PyFloat_AS_DOUBLE(o);
        return true;
    }
    if (PyLong_Check(o)) {
        out = PyLong_AsDouble(o);
        if (out == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return false;
        }
        return true;
    }
    return false;
}

bool plain_int64(nb::handle h, int64_t& out) {
    PyObject* o = h.ptr();
    if (!PyLong_Check(o)) return false;
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return false;
    }
    out = static_cast<int64_t>(v);
    return true;
}

using Int64Array = nb::ndarray<const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using RowsArray = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using SecondsArray = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using CodesArray = nb::ndarray<int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

// A str's UTF-8 bytes without a copy into a std::string where possible.
bool str_view(PyObject* o, std::string& out) {
    if (!PyUnicode_Check(o)) return false;
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(o, &size);
    if (!data) {
        PyErr_Clear();  // a str with lone surrogates: not a usable frame id
        return false;
    }
    out.assign(data, static_cast<size_t>(size));
    return true;
}

PyObject* g_kernel_error = nullptr;  // KernelError: args = the error tuple (see raise_error)

nb::object frame_name(const Kernel& k, int32_t id) {
    if (id < 0 || static_cast<size_t>(id) >= k.frame_count()) return nb::none();
    return nb::str(k.name(id).c_str());
}

// (code, argument, kind, time, stamp, source name, target name, failed index)
nb::tuple error_tuple(const Kernel& k, const Error& e, size_t failed) {
    return nb::make_tuple(static_cast<int>(e.code), e.argument, static_cast<int>(e.kind), e.time, e.stamp,
                          frame_name(k, e.source), frame_name(k, e.target), failed);
}

// A query that failed raises KernelError(*error_tuple): no error state is kept between
// calls, so concurrent threads never see each other's errors.
[[noreturn]] void raise_error(const Kernel& k, const Error& e, size_t failed = 0) {
    nb::tuple t = error_tuple(k, e, failed);
    PyErr_SetObject(g_kernel_error, t.ptr());
    throw nb::python_error();
}

// ---- messages built in one step ---------------------------------------------------------
// tf2py's message classes use __slots__; a slot is a PyObject* at a fixed offset, given by
// its member descriptor. A lookup's TransformStamped is allocated and filled directly (no
// __init__, no attribute lookups), which is what makes the contract's call the fast one.

struct Slots {
    PyTypeObject* type = nullptr;
    Py_ssize_t offset[4] = {0, 0, 0, 0};
};

struct MessageTypes {
    Slots time, header, vector3, quaternion, transform, stamped;
    bool ready = false;
} g_types;

Slots slots_of(nb::handle cls, std::initializer_list<const char*> names) {
    if (!PyType_Check(cls.ptr())) throw nb::type_error("a message class is needed");
    Slots out;
    out.type = reinterpret_cast<PyTypeObject*>(cls.ptr());
    int k = 0;
    for (const char* name : names) {
        nb::object d = nb::steal(PyObject_GetAttrString(cls.ptr(), name));
        if (!d.is_valid()) throw nb::python_error();
        if (Py_TYPE(d.ptr()) != &PyMemberDescr_Type) throw nb::type_error("message fields must be __slots__");
        PyMemberDef* member = reinterpret_cast<PyMemberDescrObject*>(d.ptr())->d_member;
        if (member->type != T_OBJECT_EX) throw nb::type_error("message fields must be object slots");
        out.offset[k++] = member->offset;
    }
    return out;
}

void set_message_types(nb::handle time, nb::handle header, nb::handle vector3, nb::handle quaternion,
                       nb::handle transform, nb::handle stamped) {
    MessageTypes t;
    t.time = slots_of(time, {"_ns"});
    t.header = slots_of(header, {"stamp", "frame_id"});
    t.vector3 = slots_of(vector3, {"x", "y", "z"});
    t.quaternion = slots_of(quaternion, {"x", "y", "z", "w"});
    t.transform = slots_of(transform, {"translation", "rotation"});
    t.stamped = slots_of(stamped, {"header", "child_frame_id", "transform"});
    for (PyTypeObject* type : {t.time.type, t.header.type, t.vector3.type, t.quaternion.type, t.transform.type,
                               t.stamped.type})
        Py_INCREF(type);  // kept for the life of the process
    t.ready = true;
    g_types = t;
}

// A new instance of a slots class with its fields (references stolen; nullptr on failure,
// with the references released).
PyObject* make(const Slots& s, std::initializer_list<PyObject*> fields) {
    PyObject* o = nullptr;
    bool ok = true;
    for (PyObject* f : fields) ok = ok && f != nullptr;
    if (ok) o = s.type->tp_alloc(s.type, 0);
    int k = 0;
    for (PyObject* f : fields) {
        if (o) {
            *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + s.offset[k]) = f;
        } else {
            Py_XDECREF(f);
        }
        ++k;
    }
    return o;
}

PyObject* slot(PyObject* o, Py_ssize_t offset) { return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(o) + offset); }

// The TransformStamped of a lookup; stamp_obj (borrowed) is reused when it is that Time.
nb::object build_stamped(PyObject* target, PyObject* source, const Pose& p, int64_t used, PyObject* time) {
    const MessageTypes& t = g_types;
    PyObject* stamp = nullptr;
    if (Py_TYPE(time) == t.time.type) {
        PyObject* ns = slot(time, t.time.offset[0]);
        if (ns && PyLong_CheckExact(ns)) {
            int overflow = 0;
            const long long v = PyLong_AsLongLongAndOverflow(ns, &overflow);
            if (!overflow && v == used) {
                Py_INCREF(time);
                stamp = time;
            }
        }
    }
    if (!stamp) stamp = make(t.time, {PyLong_FromLongLong(used)});
    Py_INCREF(target);
    PyObject* header = make(t.header, {stamp, target});
    PyObject* translation =
        make(t.vector3, {PyFloat_FromDouble(p.t[0]), PyFloat_FromDouble(p.t[1]), PyFloat_FromDouble(p.t[2])});
    PyObject* rotation = make(t.quaternion, {PyFloat_FromDouble(p.q[0]), PyFloat_FromDouble(p.q[1]),
                                             PyFloat_FromDouble(p.q[2]), PyFloat_FromDouble(p.q[3])});
    PyObject* transform = make(t.transform, {translation, rotation});
    Py_INCREF(source);
    PyObject* out = make(t.stamped, {header, source, transform});
    if (!out) throw nb::python_error();
    return nb::steal(out);
}

// Nanoseconds of a time argument on the fast path: a tf2py Time, or plain float / int
// seconds (rounded to the nearest ns, half to even, as Python's round()); false for
// anything else or a time beyond int64 (Python then converts it, and names it).
bool fast_time_ns(PyObject* o, int64_t& out) {
    if (Py_TYPE(o) == g_types.time.type) {
        PyObject* ns = slot(o, g_types.time.offset[0]);
        if (!ns || !PyLong_CheckExact(ns)) return false;
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(ns, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return false;
        }
        out = v;
        return true;
    }
    if (PyFloat_Check(o)) {  // float or a subclass (numpy.float64)
        const double ns = std::nearbyint(PyFloat_AS_DOUBLE(o) * 1e9);
        if (!(ns > -9.2e18 && ns < 9.2e18)) return false;
        out = static_cast<int64_t>(ns);
        return true;
    }
    if (PyLong_CheckExact(o)) {
        int overflow = 0;
        const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return false;
        }
        if (v > 9'000'000'000LL || v < -9'000'000'000LL) return false;
        out = static_cast<int64_t>(v) * 1'000'000'000LL;
        return true;
    }
    return false;
}

// The fields of a TransformStamped of tf2py's own classes with plain values: parent and
// child ids, stamp (ns) and the 7 numbers; false for anything else (Python reads it then).
bool read_transform(PyObject* msg, std::string& parent, std::string& child, int64_t& stamp, double* v) {
    const MessageTypes& t = g_types;
    if (!t.ready || Py_TYPE(msg) != t.stamped.type) return false;
    PyObject* header = slot(msg, t.stamped.offset[0]);
    PyObject* child_id = slot(msg, t.stamped.offset[1]);
    PyObject* transform = slot(msg, t.stamped.offset[2]);
    if (!header || !child_id || !transform || Py_TYPE(header) != t.header.type ||
        Py_TYPE(transform) != t.transform.type)
        return false;
    PyObject* time = slot(header, t.header.offset[0]);
    PyObject* frame_id = slot(header, t.header.offset[1]);
    PyObject* translation = slot(transform, t.transform.offset[0]);
    PyObject* rotation = slot(transform, t.transform.offset[1]);
    if (!time || !frame_id || !translation || !rotation || Py_TYPE(translation) != t.vector3.type ||
        Py_TYPE(rotation) != t.quaternion.type)
        return false;
    if (!PyUnicode_CheckExact(frame_id) || !PyUnicode_CheckExact(child_id) || !str_view(frame_id, parent) ||
        !str_view(child_id, child) || !fast_time_ns(time, stamp))
        return false;
    for (int k = 0; k < 3; ++k) {
        PyObject* f = slot(translation, t.vector3.offset[k]);
        if (!f || !plain_double(f, v[k])) return false;
    }
    for (int k = 0; k < 4; ++k) {
        PyObject* f = slot(rotation, t.quaternion.offset[k]);
        if (!f || !plain_double(f, v[3 + k])) return false;
    }
    return true;
}

PyObject* g_notify_name = nullptr;  // "_notify_new_data"
PyObject* g_notify_noop = nullptr;  // BufferCore._notify_new_data (nothing to call)

void set_notify_noop(nb::handle function) {
    Py_XDECREF(g_notify_noop);
    g_notify_noop = function.inc_ref().ptr();
}

// True when a timeout asks for no wait (None, 0, 0.0, a zero Duration).
bool no_wait(nb::handle timeout) {
    if (timeout.is_none()) return true;
    const int truth = PyObject_IsTrue(timeout.ptr());
    if (truth < 0) throw nb::python_error();
    return truth == 0;
}

nb::tuple pose_tuple(const Pose& p, int64_t used) {
    return nb::make_tuple(p.t[0], p.t[1], p.t[2], p.q[0], p.q[1], p.q[2], p.q[3], used);
}

// A re-entrant lock (threading.RLock's semantics, usable by threading.Condition) that the
// kernel can take without calling into Python: Buffer's lock. Blocking waits release the
// GIL.
class RLock {
  public:
    RLock() = default;
    ~RLock() {
        if (count_) mutex_.unlock();
    }
    RLock(const RLock&) = delete;
    RLock& operator=(const RLock&) = delete;

    // timeout in seconds (< 0: forever), as threading.RLock.acquire.
    bool acquire(bool blocking = true, double timeout = -1.0) {
        const unsigned long me = PyThread_get_thread_ident();
        if (count_ && owner_ == me) {
            ++count_;
            return true;
        }
        if (!take(blocking, timeout)) return false;
        owner_ = me;
        count_ = 1;
        return true;
    }

    void release() {
        if (!count_ || owner_ != PyThread_get_thread_ident())
            throw nb::builtin_exception(nb::exception_type::runtime_error, "cannot release un-acquired lock");
        if (--count_ == 0) {
            owner_ = 0;
            mutex_.unlock();
        }
    }

    bool is_owned() const { return count_ && owner_ == PyThread_get_thread_ident(); }

    // threading.Condition's protocol: give the lock up entirely while waiting, then restore.
    nb::tuple release_save() {
        if (!count_) throw nb::builtin_exception(nb::exception_type::runtime_error, "cannot release un-acquired lock");
        nb::tuple state = nb::make_tuple(count_, owner_);
        count_ = 0;
        owner_ = 0;
        mutex_.unlock();
        return state;
    }

    void acquire_restore(nb::tuple state) {
        const auto count = nb::cast<unsigned long>(state[0]);
        const auto owner = nb::cast<unsigned long>(state[1]);
        take(true, -1.0);
        count_ = count;
        owner_ = owner;
    }

  private:
    // The mutex itself; a blocking wait releases the GIL (the holder may need it).
    bool take(bool blocking, double timeout) {
        if (mutex_.try_lock()) return true;
        if (!blocking) return false;
        bool got = false;
        Py_BEGIN_ALLOW_THREADS
        if (timeout < 0) {
            mutex_.lock();
            got = true;
        } else {
            got = mutex_.try_lock_for(std::chrono::duration<double>(std::min(timeout, 1e9)));
        }
        Py_END_ALLOW_THREADS
        return got;
    }

    std::timed_mutex mutex_;
    unsigned long owner_ = 0;  // written and read with the GIL held
    unsigned long count_ = 0;
};

class PyKernel {
  public:
    explicit PyKernel(int64_t cache_time_ns) : k_(cache_time_ns < 0 ? 0 : cache_time_ns) {
        authority_.emplace_back(nb::none());
    }

    int64_t cache_time() const { return k_.cache_time(); }

    int insert(nb::handle parent, nb::handle child, nb::handle stamp, nb::handle tx, nb::handle ty,
               nb::handle tz, nb::handle qx, nb::handle qy, nb::handle qz, nb::handle qw, nb::object authority,
               bool is_static) {
        double v[7];
        int64_t t = 0;
        if (!str_view(parent.ptr(), parent_) || !str_view(child.ptr(), child_) || !plain_int64(stamp, t) ||
            !plain_double(tx, v[0]) || !plain_double(ty, v[1]) || !plain_double(tz, v[2]) ||
            !plain_double(qx, v[3]) || !plain_double(qy, v[4]) || !plain_double(qz, v[5]) ||
            !plain_double(qw, v[6]))
            return static_cast<int>(tf2k::kNotSimple);
        const int r = k_.insert(parent_, child_, t, v, is_static);
        if (r > 0) set_authority(r, authority);
        return r;
    }

    // Rows of a batch: codes[k] = InsertResult per row (child id > 0 counts as stored).
    nb::tuple insert_batch(nb::list parents, nb::list children, Int64Array stamps, RowsArray rows,
                           nb::object authority, bool is_static, CodesArray codes) {
        const size_t n = stamps.shape(0);
        if (nb::len(parents) != n || nb::len(children) != n || rows.shape(0) != n || rows.shape(1) != 7 ||
            codes.shape(0) != n)
            throw nb::value_error("insert_batch: parents, children, stamps, rows (N, 7) and codes must agree in N");
        size_t stored = 0, old = 0;
        std::string parent, child, last_parent, last_child;
        int32_t last_parent_id = -1, last_child_id = -1;
        const int64_t* ts = stamps.data();
        const double* values = rows.data();
        int32_t* out = codes.data();
        for (size_t k = 0; k < n; ++k) {
            PyObject* p = PyList_GET_ITEM(parents.ptr(), static_cast<Py_ssize_t>(k));
            PyObject* c = PyList_GET_ITEM(children.ptr(), static_cast<Py_ssize_t>(k));
            if (!str_view(p, parent) || !str_view(c, child)) {
                out[k] = kNameType;
                continue;
            }
            double v[7];
            std::memcpy(v, values + 7 * k, sizeof v);
            int r;
            if (last_child_id > 0 && child == last_child && parent == last_parent) {
                // The same link as the previous row (a batch of one frame's samples).
                r = Kernel::check_values(v);
                if (r == tf2k::kStored)
                    r = k_.insert_ids(last_child_id, last_parent_id, ts[k], v, is_static) ? last_child_id
                                                                                         : tf2k::kOld;
            } else {
                r = k_.insert(parent, child, ts[k], v, is_static);
                if (r > 0) {
                    last_child = child;
                    last_parent = parent;
                    last_child_id = r;
                    const std::string& stripped = parent[0] == '/' ? parent.substr(1) : parent;
                    last_parent_id = k_.register_name(stripped);
                }
            }
            out[k] = r;
            if (r > 0) {
                ++stored;
                set_authority(r, authority);
            } else if (r == tf2k::kOld) {
                ++old;
            }
        }
        return nb::make_tuple(stored, old);
    }

    // Buffer's lock, taken by the fast calls once set (BufferCore has none).
    void set_lock(nb::handle lock) {
        lock_ = nb::inst_ptr<RLock>(lock);
        lock_object_ = nb::borrow(lock);
    }

    // Holds the buffer's lock for the scope (if there is one).
    struct Locked {
        RLock* lock;
        explicit Locked(PyKernel& k) : lock(k.lock_) {
            if (lock) lock->acquire();
        }
        ~Locked() {
            if (lock) {
                try {
                    lock->release();
                } catch (...) {
                }
            }
        }
        Locked(const Locked&) = delete;
        Locked& operator=(const Locked&) = delete;
    };

    // BufferCore.lookup_transform / Buffer.lookup_transform: the contract's call, whole in
    // C++ when the arguments are plain (str frames, a Time or float/int seconds, no wait);
    // otherwise Python's _lookup_transform_slow or, with a timeout, _wait_for_lookup.
    static nb::object lookup_transform(nb::pointer_and_handle<PyKernel> self, nb::handle target,
                                       nb::handle source, nb::handle time, nb::handle timeout) {
        if (!no_wait(timeout)) return self.h.attr("_wait_for_lookup")(target, source, time, timeout);
        PyKernel& k = *self.p;
        Locked locked(k);
        int64_t t = 0;
        if (!g_types.ready || !PyUnicode_CheckExact(target.ptr()) || !PyUnicode_CheckExact(source.ptr()) ||
            !fast_time_ns(time.ptr(), t) || !str_view(target.ptr(), k.parent_) || !str_view(source.ptr(), k.child_))
            return self.h.attr("_lookup_transform_slow")(target, source, time);
        const std::string& a = k.parent_;
        const std::string& b = k.child_;
        Pose out;
        int64_t used = 0;
        if (a == b) {
            const int32_t id = k.k_.lookup_id(a);
            used = (t == 0 && id && k.k_.has_cache(id)) ? k.k_.cache(id).latest_stamp() : t;
            return build_stamped(target.ptr(), source.ptr(), tf2k::identity_pose(), used, time.ptr());
        }
        const int32_t ta = k.k_.lookup_id(a), sb = k.k_.lookup_id(b);
        Error e;
        if (!ta || !sb) {
            e.code = ErrorCode::Frame;
            e.argument = ta ? 1 : 0;
            e.source = e.target = -1;
        } else {
            e = k.k_.lookup(ta, sb, t, out, used, k.path_);
        }
        if (e.code != ErrorCode::None)
            return self.h.attr("_raise_lookup_error")(target, source, error_tuple(k.k_, e, 0));
        return build_stamped(target.ptr(), source.ptr(), out, used, time.ptr());
    }

    // BufferCore.set_transform(transform, authority, is_static=False): whole in C++ for a
    // valid TransformStamped of tf2py's classes; anything else (and every refusal, so that
    // Python names it) goes through _set_transform_slow.
    static nb::object set_transform(nb::pointer_and_handle<PyKernel> self, nb::handle transform,
                                    nb::handle authority, nb::handle is_static) {
        const int r = self.p->insert_message(transform, authority, is_static);
        if (r < 0) return self.h.attr("_set_transform_slow")(transform, authority, is_static);
        if (r == 0) return nb::bool_(false);
        // The notification hook, when a subclass has one (Buffer's inserts do not come here).
        PyObject* hook = _PyType_Lookup(Py_TYPE(self.h.ptr()), g_notify_name);
        if (hook && hook != g_notify_noop) self.h.attr("_notify_new_data")();
        return nb::bool_(true);
    }

    // Buffer.set_transform without waiting requests or a clock: under the buffer's lock,
    // waking the threads that wait; otherwise the buffer's own path (_set_transform_slow).
    static nb::object set_transform_locked(nb::pointer_and_handle<PyKernel> self, nb::handle transform,
                                           nb::handle authority, nb::handle is_static) {
        PyKernel& k = *self.p;
        int r = tf2k::kNotSimple;
        {
            Locked locked(k);
            // Checked under the lock: a request added meanwhile must see this insert.
            if (k.plain_inserts()) r = k.insert_message(transform, authority, is_static);
            // A refused (too old) insert pruned first, as tf2 does: that can change answers.
            if (r >= 0 && k.waiting_ > 0) self.h.attr("_condition").attr("notify_all")();
        }
        // The buffer's own path resolves futures after unlocking: never under this lock.
        if (r < 0) return self.h.attr("_set_transform_slow")(transform, authority, is_static);
        return nb::bool_(r > 0);
    }

    bool plain_inserts() const {
        return requests_.is_valid() && PyDict_GET_SIZE(requests_.ptr()) == 0 && clock_.is_none();
    }

    // Read and store a message: > 0 stored, 0 too old, kNotSimple when Python must read it
    // (or name why it is refused).
    int insert_message(nb::handle transform, nb::handle authority, nb::handle is_static) {
        double v[7];
        int64_t stamp = 0;
        const int truth = PyObject_IsTrue(is_static.ptr());
        if (truth < 0) throw nb::python_error();
        if (!read_transform(transform.ptr(), parent_, child_, stamp, v)) return tf2k::kNotSimple;
        const int r = k_.insert(parent_, child_, stamp, v, truth != 0);
        if (r < 0) return tf2k::kNotSimple;
        if (r > 0) {
            nb::object keep = nb::borrow(authority);
            set_authority(r, keep);
        }
        return r;
    }

    // Buffer's state the locked insert reads: its requests dict and clock (both fixed for
    // the buffer's life), and the count of threads in a timed wait.
    void set_buffer_state(nb::handle requests, nb::handle clock) {
        if (!PyDict_Check(requests.ptr())) throw nb::type_error("requests must be a dict");
        requests_ = nb::borrow(requests);
        clock_ = nb::borrow(clock);
    }
    int waiting() const { return waiting_; }
    void set_waiting(int n) { waiting_ = n; }

    // BufferCore.can_transform / Buffer.can_transform, as lookup_transform above.
    static nb::object can_transform_fast(nb::pointer_and_handle<PyKernel> self, nb::handle target,
                                         nb::handle source, nb::handle time, nb::handle timeout) {
        if (!no_wait(timeout)) return self.h.attr("_wait_for_can")(target, source, time, timeout);
        PyKernel& k = *self.p;
        Locked locked(k);
        int64_t t = 0;
        if (!PyUnicode_CheckExact(target.ptr()) || !PyUnicode_CheckExact(source.ptr()) ||
            !fast_time_ns(time.ptr(), t) || !str_view(target.ptr(), k.parent_) || !str_view(source.ptr(), k.child_))
            return self.h.attr("_can_transform_slow")(target, source, time);
        if (k.parent_ == k.child_) return nb::bool_(true);
        const int32_t ta = k.k_.lookup_id(k.parent_), sb = k.k_.lookup_id(k.child_);
        return nb::bool_(ta && sb && k.k_.can_transform(ta, sb, t, k.path_));
    }

    nb::object lookup(const std::string& target, const std::string& source, int64_t t) {
        Pose out;
        int64_t used = 0;
        if (target == source) {  // tf2: before any validation
            int32_t id = k_.lookup_id(target);
            used = (t == 0 && id && k_.has_cache(id)) ? k_.cache(id).latest_stamp() : t;
            return pose_tuple(tf2k::identity_pose(), used);
        }
        int32_t ids[2];
        resolve({&target, &source}, ids);
        const Error e = k_.lookup(ids[0], ids[1], t, out, used, path_);
        if (e.code != ErrorCode::None) raise_error(k_, e);
        return pose_tuple(out, used);
    }

    nb::object lookup_full(const std::string& target, int64_t target_time, const std::string& source,
                           int64_t source_time, const std::string& fixed) {
        int32_t ids[3];
        resolve({&target, &source, &fixed}, ids);
        Pose out;
        int64_t used = 0;
        const Error e = k_.lookup_full(ids[0], target_time, ids[1], source_time, ids[2], out, used, path_);
        if (e.code != ErrorCode::None) raise_error(k_, e);
        return pose_tuple(out, used);
    }

    bool can_transform(const std::string& target, const std::string& source, int64_t t) {
        if (target == source) return true;
        const int32_t a = k_.lookup_id(target), b = k_.lookup_id(source);
        if (!a || !b) return false;
        return k_.can_transform(a, b, t, path_);
    }

    bool can_transform_full(const std::string& target, int64_t target_time, const std::string& source,
                            int64_t source_time, const std::string& fixed) {
        const int32_t a = k_.lookup_id(target), b = k_.lookup_id(source), f = k_.lookup_id(fixed);
        if (!a || !b || !f) return false;
        return (a == f || k_.can_transform(a, f, target_time, path_)) &&
               (f == b || k_.can_transform(f, b, source_time, path_));
    }

    nb::object common_time(const std::string& target, const std::string& source) {
        int32_t ids[2];
        resolve({&target, &source}, ids);
        int64_t t = 0;
        const Error e = k_.common_time(ids[0], ids[1], t, path_);
        if (e.code != ErrorCode::None) raise_error(k_, e);
        return nb::int_(t);
    }

    nb::object chain(const std::string& target, const std::string& source, int64_t t) {
        int32_t ids[2];
        resolve({&target, &source}, ids);
        std::vector<int32_t> out;
        const Error e = k_.chain(ids[0], ids[1], t, out, path_);
        if (e.code != ErrorCode::None) raise_error(k_, e);
        nb::list names;
        for (int32_t id : out) names.append(nb::str(k_.name(id).c_str()));
        return names;
    }

    nb::object lookup_many(const std::string& target, const std::string& source, Int64Array ts) {
        const int64_t* t = ts.data();
        return many(target, source, ts.shape(0), [t](size_t k) { return t[k]; });
    }

    // The same for float seconds (rounded to the nearest ns, half to even, as Python's
    // round()); ValueError for a time that is not finite or beyond int64 ns (Python then
    // converts and names it).
    nb::object lookup_many_seconds(const std::string& target, const std::string& source, SecondsArray ts) {
        const double* x = ts.data();
        const size_t n = ts.shape(0);
        for (size_t k = 0; k < n; ++k) {
            const double ns = x[k] * 1e9;
            if (!(ns > -9.2e18 && ns < 9.2e18)) throw nb::value_error("a time beyond int64 nanoseconds");
        }
        return many(target, source, n, [x](size_t k) { return static_cast<int64_t>(std::nearbyint(x[k] * 1e9)); });
    }

    template <class TimeAt>
    nb::object many(const std::string& target, const std::string& source, size_t n, TimeAt time_at) {
        int32_t ids[2] = {0, 0};
        if (target != source) resolve({&target, &source}, ids);
        // Large results on transparent huge pages: fewer page faults on the first write.
        const size_t bytes = (n * 16 + 1) * sizeof(double);
        const size_t huge = size_t(2) << 20;
        double* data = nullptr;
        if (bytes >= 2 * huge) {
            data = static_cast<double*>(std::aligned_alloc(huge, (bytes + huge - 1) / huge * huge));
            if (data) madvise(data, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE);
        } else {
            data = static_cast<double*>(std::malloc(bytes));
        }
        if (!data) throw std::bad_alloc();
        nb::capsule owner(data, [](void* p) noexcept { std::free(p); });
        size_t failed = 0;
        if (target == source) {
            for (size_t k = 0; k < n; ++k) tf2k::to_matrix(tf2k::identity_pose(), data + 16 * k);
        } else {
            // The GIL stays held: it is what makes every kernel call atomic for Python threads.
            const Error e = k_.lookup_many(ids[0], ids[1], time_at, n, data, failed);
            if (e.code != ErrorCode::None) raise_error(k_, e, failed);
        }
        return nb::cast(nb::ndarray<nb::numpy, double, nb::ndim<3>>(data, {n, 4, 4}, owner));
    }

    // Names of the frames the walks up from each frame visit at t (0: the latest data).
    nb::list ancestors(nb::list frames, int64_t t) {
        std::vector<int32_t> out;
        std::string name;
        for (nb::handle h : frames) {
            if (!str_view(h.ptr(), name)) continue;
            const int32_t id = k_.lookup_id(name);
            if (id) k_.ancestors(id, t, out, path_);
        }
        std::vector<uint8_t> seen(k_.frame_count(), 0);
        nb::list names;
        for (int32_t id : out) {
            const auto i = static_cast<size_t>(id);
            if (id > 0 && !seen[i]) {
                seen[i] = 1;
                names.append(nb::str(k_.name(id).c_str()));
            }
        }
        return names;
    }

    nb::object get_parent(const std::string& frame, int64_t t) const {
        const int32_t id = k_.lookup_id(frame);
        if (!id || !k_.has_cache(id)) return nb::none();
        const int32_t parent = k_.cache(id).parent_at(t);
        if (!parent) return nb::none();
        return nb::str(k_.name(parent).c_str());
    }

    bool exists(const std::string& name) const { return k_.lookup_id(name) != 0; }
    bool registered(const std::string& name) const { return k_.registered(name); }

    // Registered names in registration order (NO_PARENT excluded).
    nb::list frames() const {
        nb::list out;
        for (size_t i = 1; i < k_.frame_count(); ++i) out.append(nb::str(k_.name(static_cast<int32_t>(i)).c_str()));
        return out;
    }

    // Per frame with a cache, in id order: (name, latest parent, samples, latest stamp,
    // oldest stamp, is_static, authority).
    nb::list frame_table() const {
        nb::list out;
        for (size_t i = 1; i < k_.frame_count(); ++i) {
            const auto id = static_cast<int32_t>(i);
            if (!k_.has_cache(id)) continue;
            const auto& c = k_.cache(id);
            out.append(nb::make_tuple(nb::str(k_.name(id).c_str()), nb::str(k_.name(c.latest_parent()).c_str()),
                                      c.size(), c.latest_stamp(), c.oldest_stamp(), c.is_static(),
                                      i < authority_.size() ? authority_[i] : nb::none()));
        }
        return out;
    }

    // Every stored sample of a frame: (stamp, (7 values), parent name), oldest first.
    nb::list samples(const std::string& frame) const {
        nb::list out;
        const int32_t id = k_.lookup_id(frame);
        if (!id || !k_.has_cache(id)) return out;
        const auto& c = k_.cache(id);
        for (size_t k = 0; k < c.size(); ++k) {
            const double* v = c.values_at(k);
            out.append(nb::make_tuple(c.stamp_at(k), nb::make_tuple(v[0], v[1], v[2], v[3], v[4], v[5], v[6]),
                                      nb::str(k_.name(c.parent_of(k)).c_str())));
        }
        return out;
    }

    size_t memory_bytes() const {
        size_t total = 0;
        for (size_t i = 0; i < k_.frame_count(); ++i) total += k_.cache(static_cast<int32_t>(i)).memory_bytes();
        return total;
    }

    void clear() { k_.clear(); }

    // Lookup ids of the named frames in argument order; raises (Frame error) for the first
    // one a lookup cannot use.
    void resolve(std::initializer_list<const std::string*> names, int32_t* ids) {
        int k = 0;
        for (const std::string* name : names) {
            const int32_t id = k_.lookup_id(*name);
            if (!id) {
                Error e;
                e.code = ErrorCode::Frame;
                e.argument = k;
                e.source = e.target = -1;
                raise_error(k_, e);
            }
            ids[k++] = id;
        }
    }

    void set_authority(int id, nb::object& authority) {
        const auto i = static_cast<size_t>(id);
        if (authority_.size() <= i) authority_.resize(k_.frame_count(), nb::none());
        authority_[i] = authority;
    }

  private:
    Kernel k_;
    std::string parent_, child_;  // scratch of insert and the fast lookups
    std::vector<nb::object> authority_;
    tf2k::Path path_;  // scratch of the walks (reused: no allocation per query)
    RLock* lock_ = nullptr;
    nb::object lock_object_;  // keeps lock_ alive
    nb::object requests_, clock_ = nb::none();
    int waiting_ = 0;
};

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

}  // namespace

NB_MODULE(_kernel_ext, m) {
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
    g_notify_name = PyUnicode_InternFromString("_notify_new_data");
    m.def("set_notify_noop", &set_notify_noop, "function"_a);
    m.def("set_message_types", &set_message_types, "time"_a, "header"_a, "vector3"_a, "quaternion"_a,
          "transform"_a, "stamped"_a);

    // Methods are private (_k_name): BufferCore, a Python subclass, is the public face.
    nb::class_<PyKernel>(m, "Kernel", nb::is_weak_referenceable())
        .def(nb::init<int64_t>(), "cache_time_ns"_a)
        .def(
            "lookup_transform",
            [](nb::pointer_and_handle<PyKernel> self, nb::handle target, nb::handle source, nb::handle time) {
                return PyKernel::lookup_transform(self, target, source, time, nb::none());
            },
            "target_frame"_a.none(), "source_frame"_a.none(), "time"_a.none(),
            "The TransformStamped that maps data in source_frame into target_frame at time (a Time or\n"
            "seconds; zero = the latest common time); header.stamp is the time used. Raises tf2's\n"
            "exceptions with tf2's messages.")
        .def(
            "can_transform",
            [](nb::pointer_and_handle<PyKernel> self, nb::handle target, nb::handle source, nb::handle time) {
                return PyKernel::can_transform_fast(self, target, source, time, nb::none());
            },
            "target_frame"_a.none(), "source_frame"_a.none(), "time"_a.none(),
            "Whether lookup_transform(target_frame, source_frame, time) would succeed.")
        // Buffer's forms (Buffer.lookup_transform = these): with a timeout they call the
        // buffer's _wait_for_lookup / _wait_for_can; without, they run here under its lock.
        .def("_k_lookup_transform_waiting", &PyKernel::lookup_transform, "target_frame"_a.none(),
             "source_frame"_a.none(), "time"_a.none(), "timeout"_a.none() = 0.0,
             "The TransformStamped that maps data in source_frame into target_frame at time, waiting\n"
             "up to timeout (seconds or a Duration) for the data, woken by its insertion; when the\n"
             "wait runs out, tf2's exception with the wait in its message.")
        .def("_k_can_transform_waiting", &PyKernel::can_transform_fast, "target_frame"_a.none(),
             "source_frame"_a.none(), "time"_a.none(), "timeout"_a.none() = 0.0,
             "Whether lookup_transform would succeed, waiting up to timeout for it to; never raises\n"
             "for missing data.")
        .def("set_transform", &PyKernel::set_transform, "transform"_a.none(), "authority"_a.none(),
             "is_static"_a.none() = false,
             "Store a TransformStamped (maps data in child_frame_id into header.frame_id): True when\n"
             "stored, False when older than the cache window; InvalidArgumentException for invalid\n"
             "input (nothing stored).")
        .def("_k_set_transform_locked", &PyKernel::set_transform_locked, "transform"_a.none(),
             "authority"_a.none(), "is_static"_a.none() = false,
             "Store a TransformStamped under the buffer's lock and wake the waits it can satisfy.")
        .def("_k_set_buffer_state", &PyKernel::set_buffer_state, "requests"_a, "clock"_a.none())
        .def_prop_rw("_waiting", &PyKernel::waiting, &PyKernel::set_waiting)
        .def("_k_set_lock", [](PyKernel& k, RLock& lock) { k.set_lock(nb::find(&lock)); }, "lock"_a)
        .def("_k_insert", &PyKernel::insert, "parent"_a.none(), "child"_a.none(), "stamp"_a.none(), "tx"_a.none(),
             "ty"_a.none(), "tz"_a.none(), "qx"_a.none(), "qy"_a.none(), "qz"_a.none(), "qw"_a.none(),
             "authority"_a.none(), "is_static"_a)
        // Arrays exactly as given (no silent conversion of float stamps to integers).
        .def("_k_insert_batch", &PyKernel::insert_batch, "parents"_a, "children"_a, "stamps"_a.noconvert(),
             "rows"_a.noconvert(), "authority"_a.none(), "is_static"_a, "codes"_a.noconvert())
        .def("_k_lookup", &PyKernel::lookup, "target"_a, "source"_a, "t"_a)
        .def("_k_lookup_full", &PyKernel::lookup_full, "target"_a, "target_time"_a, "source"_a, "source_time"_a,
             "fixed"_a)
        .def("_k_can", &PyKernel::can_transform, "target"_a, "source"_a, "t"_a)
        .def("_k_can_full", &PyKernel::can_transform_full, "target"_a, "target_time"_a, "source"_a,
             "source_time"_a, "fixed"_a)
        .def("_k_common_time", &PyKernel::common_time, "target"_a, "source"_a)
        .def("_k_chain", &PyKernel::chain, "target"_a, "source"_a, "t"_a)
        .def("_k_lookup_many", &PyKernel::lookup_many, "target"_a, "source"_a, "ts"_a.noconvert())
        .def("_k_lookup_many_seconds", &PyKernel::lookup_many_seconds, "target"_a, "source"_a,
             "ts"_a.noconvert())
        .def("_k_ancestors", &PyKernel::ancestors, "frames"_a, "t"_a)
        .def("_k_get_parent", &PyKernel::get_parent, "frame"_a, "t"_a)
        .def("_k_exists", &PyKernel::exists, "name"_a)
        .def("_k_registered", &PyKernel::registered, "name"_a)
        .def("_k_frames", &PyKernel::frames)
        .def("_k_frame_table", &PyKernel::frame_table)
        .def("_k_samples", &PyKernel::samples, "frame"_a)
        .def("_k_memory_bytes", &PyKernel::memory_bytes)
        .def("_k_clear", &PyKernel::clear);

    nb::class_<RLock>(m, "RLock", "A re-entrant lock (threading.RLock's behaviour) the kernel takes itself.")
        .def(nb::init<>())
        .def("acquire", &RLock::acquire, "blocking"_a = true, "timeout"_a = -1.0)
        .def("release", &RLock::release)
        .def("__enter__", [](RLock& l) { return l.acquire(); })
        .def("__exit__", [](RLock& l, nb::args) { l.release(); })
        .def("_is_owned", &RLock::is_owned)
        .def("_release_save", &RLock::release_save)
        .def("_acquire_restore", &RLock::acquire_restore, "state"_a);

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
