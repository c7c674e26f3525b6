// The kernel as Python sees it: PyKernel holds the Kernel, its lock and the authorities, and
// answers the queries. Part of the binding (binding.cpp includes it once, inside its
// anonymous namespace); the inserts are in py_inserts.hpp.
//
// The boundary: every method returns a result, an error record (KernelError's tuple, or the
// tuple itself where a call returns it) or None for "Python must convert these arguments";
// none calls back into Python. Python (core.py, buffer.py) words the errors, waits and
// decides what an insert means for the requests waiting on it.
#pragma once

class PyKernel {
  public:
    // owner: the store this kernel is a member of (held weakly; None for a bare kernel), the
    // first argument of the fallbacks the public entries call (py_entry.hpp).
    PyKernel(int64_t cache_time_ns, nb::handle owner) : k_(cache_time_ns < 0 ? 0 : cache_time_ns) {
        authority_.emplace_back(nb::none());
        if (!owner.is_none()) {
            owner_ = PyWeakref_NewRef(owner.ptr(), nullptr);
            if (!owner_) throw nb::python_error();
        }
    }

    ~PyKernel() {
        for (NameSlot& slot : name_slots_) Py_XDECREF(slot.name);
        Py_XDECREF(owner_);
    }

    // The store that owns this kernel (a new reference); TypeError for a bare kernel,
    // ReferenceError once the store is gone.
    nb::object owner(const char* call) const {
        if (!owner_) throw nb::type_error((std::string(call) + " needs a BufferCore, not a bare kernel").c_str());
        PyObject* o = PyWeakref_GetObject(owner_);  // borrowed
        if (!o || o == Py_None) {
            PyErr_Clear();
            PyErr_SetString(PyExc_ReferenceError, "the store of this kernel is gone");
            throw nb::python_error();
        }
        return nb::borrow(o);
    }

    PyKernel(const PyKernel&) = delete;
    friend struct VelocityBinding;
    friend struct CdrBinding;
    PyKernel& operator=(const PyKernel&) = delete;

    int64_t cache_time() const { return k_.cache_time(); }

    // The contract's lookup_transform for plain arguments (exact str frames, a Time or
    // float / int seconds): the TransformStamped built in one step; the error record when the
    // lookup fails; None when Python must convert the arguments.
    nb::object lookup_transform(nb::handle target, nb::handle source, nb::handle time) {
        int64_t t = 0;
        std::string_view a, b;
        if (!g_types.ready || !exact_str(target.ptr(), a) || !exact_str(source.ptr(), b) ||
            !fast_time_ns(time.ptr(), t))
            return nb::none();
        Pose out;
        int64_t used = 0;
        ErrorRecord failed;
        {
            Reading access(lock_);
            if (a == b) {
                const int32_t id = k_.lookup_id(a);
                out = tf2k::identity_pose();
                used = (t == 0 && id && k_.has_cache(id)) ? k_.cache(id).latest_stamp() : t;
            } else {
                const int32_t ta = k_.lookup_id(a), sb = k_.lookup_id(b);
                const Error e = !ta ? frame_error(0) : !sb ? frame_error(1) : k_.lookup(ta, sb, t, out, used, path());
                if (e.code != ErrorCode::None) failed = ErrorRecord(k_, e);
            }
        }
        if (failed.failed_query()) return failed.tuple();
        return build_stamped(target.ptr(), source.ptr(), out, used, time.ptr());
    }

    // can_transform for plain arguments: True / False, or None when Python must convert.
    nb::object can_transform_plain(nb::handle target, nb::handle source, nb::handle time) {
        int64_t t = 0;
        std::string_view a, b;
        if (!exact_str(target.ptr(), a) || !exact_str(source.ptr(), b) || !fast_time_ns(time.ptr(), t))
            return nb::none();
        if (a == b) return nb::bool_(true);
        bool possible = false;
        {
            Reading access(lock_);
            const int32_t ta = k_.lookup_id(a), sb = k_.lookup_id(b);
            possible = ta && sb && k_.can_transform(ta, sb, t, path());
        }
        return nb::bool_(possible);
    }

    nb::object lookup(const std::string& target, const std::string& source, int64_t t) {
        Pose out;
        int64_t used = 0;
        ErrorRecord failed;
        {
            Reading access(lock_);
            if (target == source) {  // tf2: before any validation
                const int32_t id = k_.lookup_id(target);
                out = tf2k::identity_pose();
                used = (t == 0 && id && k_.has_cache(id)) ? k_.cache(id).latest_stamp() : t;
            } else {
                int32_t ids[2];
                Error e = resolve({&target, &source}, ids);
                if (e.code == ErrorCode::None) e = k_.lookup(ids[0], ids[1], t, out, used, path());
                if (e.code != ErrorCode::None) failed = ErrorRecord(k_, e);
            }
        }
        if (failed.failed_query()) failed.raise();
        return pose_tuple(out, used);
    }

    nb::object lookup_full(const std::string& target, int64_t target_time, const std::string& source,
                           int64_t source_time, const std::string& fixed) {
        Pose out;
        int64_t used = 0;
        ErrorRecord failed;
        {
            Reading access(lock_);
            int32_t ids[3];
            Error e = resolve({&target, &source, &fixed}, ids);
            if (e.code == ErrorCode::None)
                e = k_.lookup_full(ids[0], target_time, ids[1], source_time, ids[2], out, used, path());
            if (e.code != ErrorCode::None) failed = ErrorRecord(k_, e);
        }
        if (failed.failed_query()) failed.raise();
        return pose_tuple(out, used);
    }

    bool can_transform(const std::string& target, const std::string& source, int64_t t) {
        if (target == source) return true;
        Reading access(lock_);
        const int32_t a = k_.lookup_id(target), b = k_.lookup_id(source);
        return a && b && k_.can_transform(a, b, t, path());
    }

    nb::object common_time(const std::string& target, const std::string& source) {
        int64_t t = 0;
        ErrorRecord failed;
        {
            Reading access(lock_);
            int32_t ids[2];
            Error e = resolve({&target, &source}, ids);
            if (e.code == ErrorCode::None) e = k_.common_time(ids[0], ids[1], t, path());
            if (e.code != ErrorCode::None) failed = ErrorRecord(k_, e);
        }
        if (failed.failed_query()) failed.raise();
        return nb::int_(t);
    }

    // chain's two halves (fixed <- source at source_time, then target <- fixed at
    // target_time) under one access: frame names, source first, [] when all are equal.
    nb::list chain(const std::string& target, int64_t target_time, const std::string& source, int64_t source_time,
                   const std::string& fixed) {
        std::vector<std::string> names;
        ErrorRecord failed;
        {
            Reading access(lock_);
            int32_t ids[3];
            Error e = resolve({&target, &source, &fixed}, ids);
            std::vector<int32_t> first, second;
            if (e.code == ErrorCode::None) e = k_.chain(ids[2], ids[1], source_time, first, path());
            if (e.code == ErrorCode::None) e = k_.chain(ids[0], ids[2], target_time, second, path());
            if (e.code != ErrorCode::None) {
                failed = ErrorRecord(k_, e);
            } else {
                if (!first.empty() && !second.empty()) second.erase(second.begin());  // fixed, once
                for (const auto* half : {&first, &second})
                    for (int32_t id : *half) names.push_back(k_.name(id));
            }
        }
        if (failed.failed_query()) failed.raise();
        nb::list out;
        for (const std::string& name : names) out.append(nb::str(name.data(), name.size()));
        return out;
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

    // Names of the frames the walks up from each frame visit at t (0: the latest data).
    nb::list ancestors(nb::list frames, int64_t t) {
        std::vector<std::string> wanted;
        std::string_view name;
        for (nb::handle h : frames)
            if (str_view(h.ptr(), name)) wanted.emplace_back(name);
        std::vector<std::string> names;
        {
            Reading access(lock_);
            std::vector<int32_t> out;
            for (const std::string& w : wanted) {
                const int32_t id = k_.lookup_id(w);
                if (id) k_.ancestors(id, t, out, path());
            }
            std::vector<uint8_t> seen(k_.frame_count(), 0);
            for (int32_t id : out) {
                const auto i = static_cast<size_t>(id);
                if (id > 0 && !seen[i]) {
                    seen[i] = 1;
                    names.push_back(k_.name(id));
                }
            }
        }
        nb::list out;
        for (const std::string& n : names) out.append(nb::str(n.data(), n.size()));
        return out;
    }

    // tf2's _getParent: the parent of exactly this name at t (no '/' stripped, as tf2), or None.
    nb::object get_parent(const std::string& frame, int64_t t) {
        std::string parent;
        {
            Reading access(lock_);
            const int32_t id = k_.registered_id(frame);
            const int32_t p = id && k_.has_cache(id) ? k_.cache(id).parent_at(t) : 0;
            if (p) parent = k_.name(p);
        }
        if (parent.empty()) return nb::none();
        return nb::str(parent.data(), parent.size());
    }

    bool exists(const std::string& name) {
        Reading access(lock_);
        return k_.lookup_id(name) != 0;
    }

    // Registered names in registration order (NO_PARENT excluded).
    nb::list frames() {
        std::vector<std::string> names;
        {
            Reading access(lock_);
            for (size_t i = 1; i < k_.frame_count(); ++i)
                if (!k_.forgotten(static_cast<int32_t>(i))) names.push_back(k_.name(static_cast<int32_t>(i)));
        }
        nb::list out;
        for (const std::string& n : names) out.append(nb::str(n.data(), n.size()));
        return out;
    }

    // Per frame with a cache, in id order: (name, latest parent, samples, latest stamp,
    // oldest stamp, is_static, authority).
    nb::list frame_table() {
        struct Row {
            std::string name, parent;
            size_t size, id;
            int64_t latest, oldest;
            bool is_static;
        };
        std::vector<Row> rows;
        {
            Reading access(lock_);
            for (size_t i = 1; i < k_.frame_count(); ++i) {
                const auto id = static_cast<int32_t>(i);
                if (!k_.has_cache(id)) continue;
                const auto& c = k_.cache(id);
                rows.push_back({k_.name(id), k_.name(c.latest_parent()), c.size(), i, c.latest_stamp(),
                                c.oldest_stamp(), c.is_static()});
            }
        }
        nb::list out;
        for (const Row& r : rows)
            out.append(nb::make_tuple(nb::str(r.name.data(), r.name.size()), nb::str(r.parent.data(), r.parent.size()),
                                      r.size, r.latest, r.oldest, r.is_static,
                                      r.id < authority_.size() ? authority_[r.id] : nb::none()));
        return out;
    }

    // Every stored sample of a frame: (stamp, (7 values), parent name), oldest first.
    nb::list samples(const std::string& frame) {
        struct Sample {
            int64_t stamp;
            double v[7];
            std::string parent;
        };
        std::vector<Sample> rows;
        {
            Reading access(lock_);
            const int32_t id = k_.lookup_id(frame);
            if (id && k_.has_cache(id)) {
                const auto& c = k_.cache(id);
                for (size_t k = 0; k < c.size(); ++k) {
                    Sample s{c.stamp_at(k), {}, k_.name(c.parent_of(k))};
                    std::memcpy(s.v, c.values_at(k), sizeof s.v);
                    rows.push_back(std::move(s));
                }
            }
        }
        nb::list out;
        for (const Sample& s : rows) {
            const double* v = s.v;
            out.append(nb::make_tuple(s.stamp, nb::make_tuple(v[0], v[1], v[2], v[3], v[4], v[5], v[6]),
                                      nb::str(s.parent.data(), s.parent.size())));
        }
        return out;
    }

    size_t memory_bytes() {
        Reading access(lock_);
        size_t total = 0;
        for (size_t i = 0; i < k_.frame_count(); ++i) total += k_.cache(static_cast<int32_t>(i)).memory_bytes();
        return total;
    }

    void clear() {
        Writing access(lock_);
        k_.clear();
    }

    // Drop the static transforms of the named frames (str items; others are skipped);
    // returns how many were dropped.
    size_t drop_static(nb::list names) {
        std::vector<std::string> wanted;
        std::string_view name;
        for (nb::handle item : names)
            if (str_view(item.ptr(), name)) wanted.emplace_back(name);
        Writing access(lock_);
        size_t dropped = 0;
        for (const std::string& w : wanted) {
            const int32_t id = k_.lookup_id(w);
            if (id && k_.drop_static(id)) ++dropped;
        }
        return dropped;
    }

    // Forget the named frames whole: data and names (str items; others are skipped);
    // returns how many were forgotten.
    size_t forget(nb::list names) {
        std::vector<std::string> wanted;
        std::string_view name;
        for (nb::handle item : names)
            if (str_view(item.ptr(), name)) wanted.emplace_back(name);
        size_t forgotten = 0;
        {
            Writing access(lock_);
            for (const std::string& w : wanted) {
                const int32_t id = k_.registered_id(w);
                if (id && k_.forget(id)) ++forgotten;
            }
        }
        if (forgotten) {
            // What remembers ids by name must look them up again: the name slots here, and
            // every FrameIds (their ids belong to a kernel serial; a new one starts them afresh).
            serial_ = next_serial();
            for (NameSlot& slot : name_slots_) {
                PyObject* name = slot.name;
                slot = NameSlot{};
                Py_XDECREF(name);  // an exact str: its deallocation runs no Python code
            }
        }
        return forgotten;
    }

  protected:
    friend struct InsertBinding;

    // Lookup ids of the named frames in argument order; a Frame error for the first one a
    // lookup cannot use.
    Error resolve(std::initializer_list<const std::string*> names, int32_t* ids) const {
        int k = 0;
        for (const std::string* name : names) {
            const int32_t id = k_.lookup_id(*name);
            if (!id) return frame_error(k);
            ids[k++] = id;
        }
        return Error{};
    }

    // Scratch of the walks of one thread (reused: no allocation per query).
    static tf2k::Path& path() {
        static thread_local tf2k::Path scratch;
        return scratch;
    }

    // Batch lookups: the walks run without the GIL for a batch of kReleaseGilRows stamps or
    // more, under the shared lock (other batch lookups run meanwhile).
    template <class TimeAt>
    nb::object many(const std::string& target, const std::string& source, size_t n, TimeAt time_at) {
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
        ErrorRecord failed;
        if (target == source) {
            for (size_t k = 0; k < n; ++k) tf2k::to_matrix(tf2k::identity_pose(), data + 16 * k);
        } else {
            const bool release = n >= kReleaseGilRows;
            Reading access(lock_, release);
            WithoutGil nogil(release);
            int32_t ids[2];
            Error e = resolve({&target, &source}, ids);
            size_t index = 0;
            if (e.code == ErrorCode::None) e = k_.lookup_many(ids[0], ids[1], time_at, n, data, index);
            if (e.code != ErrorCode::None) failed = ErrorRecord(k_, e, index);
        }
        if (failed.failed_query()) failed.raise();
        return nb::cast(nb::ndarray<nb::numpy, double, nb::ndim<3>>(data, {n, 4, 4}, owner));
    }

    void set_authority(int id, nb::handle authority) {
        const auto i = static_cast<size_t>(id);
        if (authority_.size() <= i) authority_.resize(i + 1, nb::none());
        if (authority_[i].ptr() != authority.ptr()) authority_[i] = nb::borrow(authority);
    }

    // Frame names seen as str objects: the object (a strong reference, so its address is
    // not reused while here) -> the id of its name with one leading '/' stripped. Only exact
    // str (immutable, no __del__), only names already registered by a stored row. Touched
    // with the GIL held, outside Access scopes.
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

    std::array<NameSlot, kNameSlots> name_slots_{};
    KernelLock lock_;
    Kernel k_;
    // Tells kernels apart for what caches their frame ids (py_frame_ids.hpp's FrameIds).
    uint64_t serial_ = next_serial();  // renewed when names are forgotten (GIL held)
    static uint64_t next_serial() {
        static std::atomic<uint64_t> serials{0};
        return ++serials;
    }
    std::vector<nb::object> authority_;  // by child id; touched with the GIL held only
    PyObject* owner_ = nullptr;           // a weak reference to the owning store, or null

  public:
    // What the public set_transform does with an insert (py_entry.hpp), set by Python, which
    // decides: 0 the kernel alone; 1 the kernel, then the registered after-insert callable
    // (someone waits); 2 the registered slow callable for everything (Python must see the
    // insert before it happens). Read before and after each insert; a value higher than
    // needed only costs time.
    std::atomic<int> insert_mode_{0};
};
