// TFMessage CDR samples (cdr.hpp) for Python: decoded to columns, or straight into the
// kernel's batch insert, several samples (a round of the fleet) in one call with the GIL
// released. Part of the binding (binding.cpp includes it once, inside its anonymous
// namespace, after PyKernel).
//
// The boundary: a refused sample is a record (its CdrStatus and where it went wrong), an
// invalid row a count and the first row's InsertResult; Python words and counts them
// (tf2py/transport/ros2/cdr.py).
#pragma once

// (cdr.hpp: included by binding.cpp, outside the anonymous namespace)

struct CdrBinding {
    // Columns of one sample: (parents, children, stamps int64 (N,), values float64 (N, 7)),
    // or the refusal (status, transform, count). `names`: a dict that makes equal frame ids
    // one str across calls (None: within the call only); `prefix`: None, or each frame id
    // prefixed as the fleet names it.
    static nb::tuple decode(nb::handle data, size_t max_chars, nb::handle names, nb::handle prefix) {
        Sample sample(data);
        std::string_view pre;
        const bool prefixing = !prefix.is_none();
        if (prefixing && !str_view(prefix.ptr(), pre)) throw nb::type_error("decode_tf_cdr: prefix must be a str");
        if (!names.is_none() && !PyDict_CheckExact(names.ptr()))
            throw nb::type_error("decode_tf_cdr: names must be a dict or None");
        std::vector<tf2k::CdrRow>& rows = scratch();
        rows.clear();
        uint32_t where = 0, count = 0;
        const int status = tf2k::decode_tf_message(sample.data(), sample.size(), max_chars, rows, where, count);
        if (status != tf2k::kCdrOk) return nb::make_tuple(status, where, count);
        const size_t n = rows.size();
        auto* stamps = new int64_t[n ? n : 1];
        nb::capsule stamps_owner(stamps, [](void* p) noexcept { delete[] static_cast<int64_t*>(p); });
        auto* values = new double[n ? 7 * n : 1];
        nb::capsule values_owner(values, [](void* p) noexcept { delete[] static_cast<double*>(p); });
        nb::list parents = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(n)));
        nb::list children = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(n)));
        Strings strings(names, prefixing ? &pre : nullptr);
        for (size_t i = 0; i < n; ++i) {
            const tf2k::CdrRow& row = rows[i];
            stamps[i] = row.stamp;
            std::memcpy(values + 7 * i, row.values, sizeof row.values);
            PyList_SET_ITEM(parents.ptr(), static_cast<Py_ssize_t>(i), strings.get(row.parent));
            PyList_SET_ITEM(children.ptr(), static_cast<Py_ssize_t>(i), strings.get(row.child));
        }
        if (rows.capacity() > kKeepRows) std::vector<tf2k::CdrRow>().swap(rows);  // a huge sample's rows go
        return nb::make_tuple(parents, children,
                              nb::ndarray<nb::numpy, int64_t, nb::ndim<1>>(stamps, {n}, stamps_owner),
                              nb::ndarray<nb::numpy, double, nb::ndim<2>>(values, {n, 7}, values_owner));
    }

    // One transform's (parent, child, stamp, (7 values)) when the sample holds exactly one;
    // None when it holds another count; the refusal (status, transform, count) when malformed.
    static nb::object decode_one(nb::handle data) {
        Sample sample(data);
        uint32_t where = 0, count = 0;
        if (tf2k::tf_message_count(sample.data(), sample.size(), count) && count != 1) return nb::none();
        std::vector<tf2k::CdrRow>& rows = scratch();
        rows.clear();
        const int status = tf2k::decode_tf_message(sample.data(), sample.size(), 0, rows, where, count);
        if (status != tf2k::kCdrOk) return nb::make_tuple(status, where, count);
        if (rows.size() != 1) return nb::none();
        const tf2k::CdrRow& row = rows[0];
        const double* v = row.values;
        Strings strings(nb::none(), nullptr);
        return nb::make_tuple(nb::steal(strings.get(row.parent)), nb::steal(strings.get(row.child)), row.stamp,
                              nb::make_tuple(v[0], v[1], v[2], v[3], v[4], v[5], v[6]));
    }

    // Samples into the kernel, with frame_ids[k] (a FrameIds: only its admitted frame ids,
    // prefixed; or None: the frame ids as sent). Returns (stored, old, records): int64 (S, 9)
    // per sample [status, transforms, where, stored, old, invalid, first invalid row, its
    // InsertResult, first row's stamp]; status kUnknownFrames (nothing stored) when a row names
    // a frame id its FrameIds has not admitted, `where` the first such row.
    static nb::tuple insert(PyKernel& k, nb::list samples, nb::list frame_ids, nb::handle authority, bool is_static,
                            size_t max_chars) {
        // Tuples of the arguments: a buffer's __buffer__ (Python code) cannot change them.
        nb::tuple all_samples = nb::steal<nb::tuple>(PySequence_Tuple(samples.ptr()));
        nb::tuple all_ids = nb::steal<nb::tuple>(PySequence_Tuple(frame_ids.ptr()));
        const size_t count = all_samples.size();
        if (all_ids.size() != count) throw nb::value_error("insert_cdr: one frame_ids (or None) per sample");
        std::vector<Sample> held;
        held.reserve(count);
        std::vector<FrameIds*> ids(count, nullptr);
        Release busy;
        const uint64_t token = ++call_tokens_;
        size_t bytes = 0;
        for (size_t s = 0; s < count; ++s) {
            held.emplace_back(all_samples[s]);
            bytes += held.back().size();
            nb::handle h = all_ids[s];
            if (h.is_none()) continue;
            FrameIds* f = nullptr;
            if (!nb::try_cast<FrameIds*>(h, f) || !f) throw nb::type_error("insert_cdr: frame_ids holds FrameIds or None");
            if (!f->busy_) {
                f->busy_ = token;
                busy.held.push_back(f);
                f->use_kernel(k.serial_);
            } else if (f->busy_ != token) {
                throw nb::value_error("insert_cdr: frame ids in use by another insert");
            }
            ids[s] = f;
        }
        auto* records = new int64_t[count ? kRecord * count : 1]();
        nb::capsule owner(records, [](void* p) noexcept { delete[] static_cast<int64_t*>(p); });
        Scratch work;  // this thread's vectors, kept between calls (a round's rows are ~150 KB)
        std::vector<tf2k::CdrRow>& rows = work->rows;
        std::vector<FrameIds::Pair>& entries = work->entries;
        std::vector<size_t>& ends = work->ends;  // rows of sample s: [ends[s - 1], ends[s])
        ends.assign(count, 0);
        const bool release = bytes >= kReleaseGilBytes;
        {
            WithoutGil nogil(release);
            decode_all(held, ids, max_chars, rows, entries, ends, records);
        }
        std::vector<int32_t>& stored_children = work->stored_children;
        size_t stored = 0, old = 0;
        {
            Writing access(k.lock_, release);
            WithoutGil nogil(release);
            insert_all(k.k_, rows, entries, ends, is_static, records, stored_children, stored, old);
        }
        int32_t last = 0;
        for (int32_t id : stored_children)
            if (id != last) k.set_authority(last = id, authority);
        return nb::make_tuple(stored, old, nb::ndarray<nb::numpy, int64_t, nb::ndim<2>>(records, {count, kRecord}, owner));
    }

    static void bind(nb::module_& m, nb::class_<PyKernel>& kernel) {
        nb::class_<FrameIds>(m, "FrameIds")
            .def(nb::init<std::string>(), "prefix"_a)
            .def_prop_ro("prefix", &FrameIds::prefix)
            .def("admit", &FrameIds::admit, "frames"_a)
            .def("names", &FrameIds::names)
            .def("__len__", &FrameIds::size);
        m.def("decode_tf_cdr", &decode, "data"_a, "max_chars"_a = 0, "names"_a.none() = nb::none(),
              "prefix"_a.none() = nb::none());
        m.def("decode_tf_cdr_one", &decode_one, "data"_a);
        m.attr("CDR_UNKNOWN_FRAMES") = kUnknownFrames;
        m.attr("CDR_MAX_TRANSFORMS") = tf2k::kCdrMaxTransforms;
        kernel.def("insert_cdr", &insert, "samples"_a, "frame_ids"_a, "authority"_a.none(), "is_static"_a,
                   "max_chars"_a = 0);
    }

  private:
    static constexpr int kUnknownFrames = 100;
    static constexpr size_t kRecord = 9;
    static constexpr size_t kReleaseGilBytes = 4096;
    static constexpr size_t kKeepRows = 4096;  // rows of scratch kept between calls
    static inline uint64_t call_tokens_ = 0;  // (the GIL held)

    // A sample's bytes (any contiguous buffer), held for the call: an exported bytearray
    // cannot be resized meanwhile, so the bytes stay where they are without the GIL.
    class Sample {
      public:
        explicit Sample(nb::handle o) {
            if (PyObject_GetBuffer(o.ptr(), &view_, PyBUF_SIMPLE) != 0) {
                PyErr_Clear();
                throw nb::type_error("a CDR sample must be bytes, bytearray or a contiguous buffer");
            }
            held_ = true;
        }
        Sample(Sample&& other) noexcept : view_(other.view_), held_(other.held_) { other.held_ = false; }
        Sample(const Sample&) = delete;
        Sample& operator=(const Sample&) = delete;
        Sample& operator=(Sample&&) = delete;
        ~Sample() {
            if (held_) PyBuffer_Release(&view_);
        }
        const uint8_t* data() const { return static_cast<const uint8_t*>(view_.buf); }
        size_t size() const { return static_cast<size_t>(view_.len); }

      private:
        Py_buffer view_{};
        bool held_ = false;
    };

    // The FrameIds an insert marked busy, unmarked when it ends (the GIL held: destroyed
    // after the scopes that released it).
    struct Release {
        std::vector<FrameIds*> held;
        ~Release() {
            for (FrameIds* f : held) f->busy_ = 0;
        }
    };

    // str objects of frame ids, one per distinct name within a call (and across calls
    // through `names`); new references.
    class Strings {
      public:
        Strings(nb::handle names, const std::string_view* prefix) : names_(names), prefix_(prefix) {}
        ~Strings() {
            for (auto& kv : made_) Py_DECREF(kv.second);
        }
        Strings(const Strings&) = delete;
        Strings& operator=(const Strings&) = delete;

        PyObject* get(std::string_view raw) {
            if (last_ && raw == last_raw_) {
                Py_INCREF(last_);
                return last_;
            }
            auto it = made_.find(raw);
            PyObject* s = nullptr;
            if (it != made_.end()) {
                s = it->second;
            } else {
                const std::string name = prefix_ ? prefixed_name(*prefix_, raw) : std::string(raw);
                s = PyUnicode_DecodeUTF8(name.data(), static_cast<Py_ssize_t>(name.size()), "strict");
                if (!s) throw nb::python_error();  // (checked UTF-8 already: never)
                if (!names_.is_none()) {
                    PyObject* shared = PyDict_SetDefault(names_.ptr(), s, s);
                    if (!shared) {
                        Py_DECREF(s);
                        throw nb::python_error();
                    }
                    Py_INCREF(shared);
                    Py_DECREF(s);
                    s = shared;
                }
                made_.emplace(raw, s);
            }
            last_ = s;
            last_raw_ = raw;
            Py_INCREF(s);
            return s;
        }

      private:
        nb::handle names_;
        const std::string_view* prefix_;
        std::unordered_map<std::string_view, PyObject*> made_;  // views into the sample
        PyObject* last_ = nullptr;
        std::string_view last_raw_;
    };

    // insert's working vectors: this thread's, kept between calls up to kKeepRows rows
    // (allocating a round's rows afresh cost a fresh mapping and its page faults per call);
    // a call made while another of the same thread holds them (from a destructor that runs
    // Python) gets vectors of its own.
    struct Buffers {
        std::vector<tf2k::CdrRow> rows;
        std::vector<FrameIds::Pair> entries;
        std::vector<size_t> ends;
        std::vector<int32_t> stored_children;
        bool busy = false;
    };
    class Scratch {
      public:
        Scratch() {
            Buffers& kept = kept_buffers();
            if (!kept.busy) {
                kept.busy = true;
                b_ = &kept;
            } else {
                own_ = std::make_unique<Buffers>();
                b_ = own_.get();
            }
        }
        ~Scratch() {
            if (own_) return;
            b_->rows.clear();
            b_->entries.clear();
            b_->stored_children.clear();
            if (b_->rows.capacity() > kKeepRows) {
                std::vector<tf2k::CdrRow>().swap(b_->rows);
                std::vector<FrameIds::Pair>().swap(b_->entries);
                std::vector<int32_t>().swap(b_->stored_children);
            }
            if (b_->ends.capacity() > kKeepRows) std::vector<size_t>().swap(b_->ends);
            b_->busy = false;
        }
        Scratch(const Scratch&) = delete;
        Scratch& operator=(const Scratch&) = delete;
        Buffers* operator->() const { return b_; }

      private:
        static Buffers& kept_buffers() {
            static thread_local Buffers buffers;
            return buffers;
        }
        Buffers* b_ = nullptr;
        std::unique_ptr<Buffers> own_;
    };

    static std::vector<tf2k::CdrRow>& scratch() {
        static thread_local std::vector<tf2k::CdrRow> rows;
        return rows;
    }

    // Every sample decoded and its frame ids found (no lock: only the samples are read).
    static void decode_all(const std::vector<Sample>& held, const std::vector<FrameIds*>& ids, size_t max_chars,
                           std::vector<tf2k::CdrRow>& rows,
                           std::vector<FrameIds::Pair>& entries, std::vector<size_t>& ends, int64_t* records) {
        for (size_t s = 0; s < held.size(); ++s) {
            int64_t* r = records + kRecord * s;
            const size_t first = rows.size();
            uint32_t where = 0, count = 0;
            int status = tf2k::decode_tf_message(held[s].data(), held[s].size(), max_chars, rows, where, count);
            r[1] = count;
            r[6] = -1;
            if (status == tf2k::kCdrOk && ids[s]) {
                if (!ids[s]->entries_of(rows, first, entries, where)) status = kUnknownFrames;
            } else {
                entries.resize(rows.size());  // {nullptr, nullptr}: the frame ids as sent
            }
            if (status != tf2k::kCdrOk) {
                rows.resize(first);
                entries.resize(first);
                r[2] = where;
            } else if (rows.size() > first) {
                r[8] = rows[first].stamp;
            }
            r[0] = status;
            ends[s] = rows.size();
        }
    }

    // The decoded rows stored (the kernel's lock held): each row's frame ids as cached ids when
    // both are known, else through insert()'s checks of the names, which registers them.
    static void insert_all(Kernel& kernel, std::vector<tf2k::CdrRow>& rows,
                           const std::vector<FrameIds::Pair>& entries, const std::vector<size_t>& ends, bool is_static, int64_t* records,
                           std::vector<int32_t>& stored_children, size_t& stored, size_t& old) {
        // Each row's frame has its storage somewhere cold (a fleet holds 50 000 frames): the
        // rows ahead are asked for, in three steps, so that their cache misses overlap. The
        // child's entry (kAheadEntry rows ahead), then its cache object (kAheadCache), then
        // the storage that object points to (kAheadStorage). Measured: the fleet's round of
        // 32 samples x 50 rows, 1 000 robots, 10 s windows full (bench fleet --ingest-only).
        constexpr size_t kAheadEntry = 16, kAheadCache = 10, kAheadStorage = 5;
        const size_t total = rows.size();
        auto child_id = [&](size_t i) -> int32_t {
            const FrameIds::Entry* c = i < total ? entries[i].second : nullptr;
            return c ? c->id : -1;
        };
        auto prefetch_entries = [&](size_t i) {
            if (i < total && entries[i].second) {
                tf2k::prefetch(entries[i].first);
                tf2k::prefetch(entries[i].second);
            }
        };
        for (size_t i = 0; i < std::min(total, kAheadEntry); ++i) prefetch_entries(i);
        size_t begin = 0;
        for (size_t s = 0; s < ends.size(); ++s) {
            int64_t* r = records + kRecord * s;
            for (size_t i = begin; i < ends[s]; ++i) {
                prefetch_entries(i + kAheadEntry);
                kernel.prefetch_cache(child_id(i + kAheadCache));
                kernel.prefetch_storage(child_id(i + kAheadStorage));
                tf2k::CdrRow& row = rows[i];
                FrameIds::Entry* p = entries[i].first;
                FrameIds::Entry* c = entries[i].second;
                int code;
                if (!p) {
                    code = kernel.insert(row.parent, row.child, row.stamp, row.values, is_static);
                } else if (p->id >= 0 && c->id > 0 && c->id != p->id) {
                    code = Kernel::check_values(row.values);
                    if (code == tf2k::kStored)
                        code = kernel.insert_ids(c->id, p->id, row.stamp, row.values, is_static) ? c->id : tf2k::kOld;
                } else {
                    int32_t parent_id = 0;
                    code = kernel.insert(p->name, c->name, row.stamp, row.values, is_static, parent_id);
                    if (code >= 0) {
                        std::string_view child = c->name;
                        if (!child.empty() && child[0] == '/') child.remove_prefix(1);
                        p->id = parent_id;
                        c->id = code > 0 ? code : kernel.registered_id(child);
                    }
                }
                if (code > 0) {
                    ++r[3];
                    ++stored;
                    stored_children.push_back(code);
                } else if (code == tf2k::kOld) {
                    ++r[4];
                    ++old;
                } else {
                    if (!r[5]++) {
                        r[6] = static_cast<int64_t>(i - begin);
                        r[7] = code;
                    }
                }
            }
            begin = ends[s];
        }
    }
};
