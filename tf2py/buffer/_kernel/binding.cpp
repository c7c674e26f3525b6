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
#include <array>
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

#include "py_values.hpp"
#include "py_messages.hpp"
#include "py_lock.hpp"

PyObject* g_batch_result = nullptr;  // BatchResult (set_transforms' result type)

void set_batch_result(nb::handle type) {
    if (!PyType_Check(type.ptr()) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type.ptr()), &PyTuple_Type))
        throw nb::type_error("set_batch_result needs a tuple subclass");
    Py_XDECREF(g_batch_result);
    g_batch_result = type.inc_ref().ptr();
}

class PyKernel {
  public:
    explicit PyKernel(int64_t cache_time_ns) : k_(cache_time_ns < 0 ? 0 : cache_time_ns) {
        authority_.emplace_back(nb::none());
    }

    ~PyKernel() {
        for (NameSlot& slot : name_slots_) Py_XDECREF(slot.name);
    }

    PyKernel(const PyKernel&) = delete;
    PyKernel& operator=(const PyKernel&) = delete;

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
        int32_t* out = codes.data();
        insert_rows_into(parents, children, stamps.data(), rows.data(), n, authority, is_static, stored, old,
                         [out](size_t k, int r) { out[k] = r; });
        return nb::make_tuple(stored, old);
    }

    // set_transforms' common form: the BatchResult (the type set_batch_result registered)
    // straight from here, its invalid list holding the indices of refused rows (Python
    // replaces them by (index, exception)); no codes array.
    nb::object insert_rows(nb::list parents, nb::list children, Int64Array stamps, RowsArray rows,
                           nb::object authority, bool is_static) {
        const size_t n = stamps.shape(0);
        if (nb::len(parents) != n || nb::len(children) != n || rows.shape(0) != n || rows.shape(1) != 7)
            throw nb::value_error("insert_rows: parents, children, stamps and rows (N, 7) must agree in N");
        if (!g_batch_result) throw nb::type_error("insert_rows: no result type (set_batch_result)");
        size_t stored = 0, old = 0;
        nb::list invalid;
        insert_rows_into(parents, children, stamps.data(), rows.data(), n, authority, is_static, stored, old,
                         [&invalid](size_t k, int r) {
                             if (r < 0) invalid.append(k);
                         });
        nb::object items = nb::make_tuple(stored, old, invalid);
        nb::object args = nb::make_tuple(items);
        PyObject* result = PyTuple_Type.tp_new(reinterpret_cast<PyTypeObject*>(g_batch_result), args.ptr(), nullptr);
        if (!result) throw nb::python_error();
        return nb::steal(result);
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

    // Drop the static transforms of the named frames (str items; others are skipped);
    // returns how many were dropped.
    size_t drop_static(nb::list names) {
        size_t dropped = 0;
        for (nb::handle item : names) {
            if (!nb::isinstance<nb::str>(item)) continue;
            const int32_t id = k_.lookup_id(nb::cast<std::string>(item));
            if (id && k_.drop_static(id)) ++dropped;
        }
        return dropped;
    }

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
    // Frame names seen as str objects: the object (a strong reference, so its address is
    // not reused while here) -> the id of its name with one leading '/' stripped. Only exact
    // str (immutable, no __del__), only names already registered by a stored row.
    struct NameSlot {
        PyObject* name = nullptr;
        int32_t id = 0;
    };
    static constexpr size_t kNameSlots = 256;

    static size_t name_slot(PyObject* o) { return (reinterpret_cast<uintptr_t>(o) >> 4) % kNameSlots; }

    bool cached_id(PyObject* o, int32_t& id) const {
        const NameSlot& slot = name_slots_[name_slot(o)];
        if (slot.name != o) return false;
        id = slot.id;
        return true;
    }

    void remember_id(PyObject* o, int32_t id) {
        if (!PyUnicode_CheckExact(o)) return;
        NameSlot& slot = name_slots_[name_slot(o)];
        if (slot.name == o) return;
        Py_INCREF(o);
        PyObject* previous = slot.name;
        slot.name = o;
        slot.id = id;
        Py_XDECREF(previous);  // an exact str: its deallocation runs no Python code
    }

    // The rows of a batch; report(k, r) with r the InsertResult of row k (> 0: the child id).
    template <class Report>
    void insert_rows_into(nb::list& parents, nb::list& children, const int64_t* ts, const double* values, size_t n,
                          nb::object& authority, bool is_static, size_t& stored, size_t& old, Report report) {
        std::string parent, child;
        for (size_t k = 0; k < n; ++k) {
            // (An authority's __del__, run by set_authority, could shrink the lists.)
            const auto i = static_cast<Py_ssize_t>(k);
            if (i >= PyList_GET_SIZE(parents.ptr()) || i >= PyList_GET_SIZE(children.ptr())) {
                report(k, kNameType);
                continue;
            }
            PyObject* p = PyList_GET_ITEM(parents.ptr(), i);
            PyObject* c = PyList_GET_ITEM(children.ptr(), i);
            double v[7];
            std::memcpy(v, values + 7 * k, sizeof v);
            int r;
            int32_t parent_id = 0, child_id = 0;
            if (cached_id(c, child_id) && cached_id(p, parent_id) && child_id > 0 && child_id != parent_id) {
                // Both names known (a registered child, a different parent): the checks of
                // insert() on the names are passed already.
                r = Kernel::check_values(v);
                if (r == tf2k::kStored)
                    r = k_.insert_ids(child_id, parent_id, ts[k], v, is_static) ? child_id : tf2k::kOld;
            } else if (!str_view(p, parent) || !str_view(c, child)) {
                r = kNameType;
            } else {
                r = k_.insert(parent, child, ts[k], v, is_static);
                if (r > 0) {
                    remember_id(c, r);
                    remember_id(p, k_.register_name(parent[0] == '/' ? parent.substr(1) : parent));
                }
            }
            report(k, r);
            if (r > 0) {
                ++stored;
                set_authority(r, authority);
            } else if (r == tf2k::kOld) {
                ++old;
            }
        }
    }

    std::array<NameSlot, kNameSlots> name_slots_{};
    Kernel k_;
    std::string parent_, child_;  // scratch of insert and the fast lookups
    std::vector<nb::object> authority_;
    tf2k::Path path_;  // scratch of the walks (reused: no allocation per query)
    RLock* lock_ = nullptr;
    nb::object lock_object_;  // keeps lock_ alive
    nb::object requests_, clock_ = nb::none();
    int waiting_ = 0;
};

#include "py_extras.hpp"

}  // namespace

NB_MODULE(_kernel_ext, m) {
    // Objects still alive when the interpreter exits (a module-level Buffer whose clock keeps
    // a jump callback, say) are not leaks of ours; nanobind's exit report of them would only
    // alarm users.
    nb::set_leak_warnings(false);
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
    m.def("set_batch_result", &set_batch_result, "type"_a);
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
        .def("_k_insert_rows", &PyKernel::insert_rows, "parents"_a, "children"_a, "stamps"_a.noconvert(),
             "rows"_a.noconvert(), "authority"_a.none(), "is_static"_a)
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
        .def("_k_clear", &PyKernel::clear)
        .def("_k_drop_static", &PyKernel::drop_static, "names"_a);

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
