// Inserts: one sample (values or a TransformStamped) and batches of rows. Part of the
// binding (binding.cpp includes it once, inside its anonymous namespace, after PyKernel).
//
// Results are codes (tf2k::InsertResult: > 0 stored, the child's id; 0 older than the cache
// window; < 0 refused, or kNotSimple when Python must read the arguments); Python names the
// cause of a refusal and decides whom an insert concerns (Buffer's waits and requests).
#pragma once

PyObject* g_batch_result = nullptr;  // BatchResult (set_transforms' result type; configure())

void set_batch_result(nb::handle type) {
    if (!PyType_Check(type.ptr()) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(type.ptr()), &PyTuple_Type))
        throw nb::type_error("configure: batch_result must be a tuple subclass");
    Py_XDECREF(g_batch_result);
    g_batch_result = type.inc_ref().ptr();
}

struct InsertBinding {
    // One sample from plain values (set_transform_values' kernel).
    static int insert(PyKernel& k, nb::handle parent, nb::handle child, nb::handle stamp, nb::handle tx, nb::handle ty,
                      nb::handle tz, nb::handle qx, nb::handle qy, nb::handle qz, nb::handle qw, nb::handle authority,
                      bool is_static) {
        double v[7];
        int64_t t = 0;
        std::string_view p, c;
        if (!str_view(parent.ptr(), p) || !str_view(child.ptr(), c) || !plain_int64(stamp, t) ||
            !plain_double(tx, v[0]) || !plain_double(ty, v[1]) || !plain_double(tz, v[2]) ||
            !plain_double(qx, v[3]) || !plain_double(qy, v[4]) || !plain_double(qz, v[5]) ||
            !plain_double(qw, v[6]))
            return static_cast<int>(tf2k::kNotSimple);
        int r = 0;
        {
            Writing access(k.lock_);
            r = k.k_.insert(p, c, t, v, is_static);
        }
        if (r > 0) k.set_authority(r, authority);
        return r;
    }

    // set_transform's kernel: 1 stored, 0 older than the cache window, kNotSimple for
    // anything Python must read itself or refuse (and name why).
    static int set_transform(PyKernel& k, nb::handle transform, nb::handle authority, nb::handle is_static) {
        double v[7];
        int64_t stamp = 0;
        std::string_view parent, child;
        nb::object names[2];
        const int truth = PyObject_IsTrue(is_static.ptr());
        if (truth < 0) throw nb::python_error();
        if (!read_transform(transform.ptr(), parent, child, stamp, v, names)) return tf2k::kNotSimple;
        int r = 0;
        {
            Writing access(k.lock_);
            r = k.k_.insert(parent, child, stamp, v, truth != 0);
        }
        if (r < 0) return tf2k::kNotSimple;
        if (r > 0) k.set_authority(r, authority);
        return r > 0 ? 1 : 0;
    }

    // Rows of a batch: codes[k] = InsertResult per row (child id > 0 counts as stored).
    static nb::tuple insert_batch(PyKernel& k, nb::list parents, nb::list children, Int64Array stamps, RowsArray rows,
                                  nb::handle authority, bool is_static, CodesArray codes) {
        const size_t n = stamps.shape(0);
        if (nb::len(parents) != n || nb::len(children) != n || rows.shape(0) != n || rows.shape(1) != 7 ||
            codes.shape(0) != n)
            throw nb::value_error("insert_batch: parents, children, stamps, rows (N, 7) and codes must agree in N");
        Batch batch;
        insert_rows_into(k, parents, children, stamps.data(), rows.data(), n, authority, is_static, batch);
        std::copy(batch.codes.begin(), batch.codes.end(), codes.data());
        return nb::make_tuple(batch.stored, batch.old);
    }

    // set_transforms' common form: the BatchResult (the type set_batch_result registered)
    // straight from here, its invalid list holding the indices of refused rows (Python
    // replaces them by (index, exception)).
    static nb::object insert_rows(PyKernel& k, nb::list parents, nb::list children, Int64Array stamps, RowsArray rows,
                                  nb::handle authority, bool is_static) {
        const size_t n = stamps.shape(0);
        if (nb::len(parents) != n || nb::len(children) != n || rows.shape(0) != n || rows.shape(1) != 7)
            throw nb::value_error("insert_rows: parents, children, stamps and rows (N, 7) must agree in N");
        if (!g_batch_result) throw nb::type_error("insert_rows: the kernel is not configured");
        Batch batch;
        insert_rows_into(k, parents, children, stamps.data(), rows.data(), n, authority, is_static, batch);
        return batch_result(batch, n);
    }

    // set_transforms for one frame's trajectory (one parent and one child name for all rows):
    // the names checked, registered and looked up once, not per row.
    static nb::object insert_trajectory(PyKernel& k, nb::handle parent, nb::handle child, Int64Array stamps,
                                        RowsArray rows, nb::handle authority, bool is_static) {
        const size_t n = stamps.shape(0);
        if (rows.shape(0) != n || rows.shape(1) != 7)
            throw nb::value_error("insert_trajectory: stamps and rows (N, 7) must agree in N");
        if (!g_batch_result) throw nb::type_error("insert_trajectory: the kernel is not configured");
        Batch batch;
        batch.codes.assign(n, kNameType);
        std::string_view p, c;
        if (!str_view(parent.ptr(), p) || !str_view(child.ptr(), c)) return batch_result(batch, n);
        const int64_t* ts = stamps.data();
        const double* values = rows.data();
        int32_t* codes = batch.codes.data();
        int32_t parent_id = -1, child_id = -1;
        {
            const bool release = n >= kReleaseGilRows;
            Writing access(k.lock_, release);
            WithoutGil nogil(release);
            Kernel& kernel = k.k_;
            double run[kRunRows * 7];
            for (size_t i = 0; i < n; ++i) {
                if (child_id >= 0 && !is_static && kernel.takes_run(child_id, ts[i])) {
                    // A trajectory in order: rows that pass the checks with rising stamps,
                    // stored together; a row that breaks the run goes one by one below.
                    size_t m = 0;
                    for (; m < kRunRows && i + m < n; ++m) {
                        if (m && ts[i + m] <= ts[i + m - 1]) break;
                        double* v = run + 7 * m;
                        std::memcpy(v, values + 7 * (i + m), 7 * sizeof(double));
                        if (Kernel::check_values(v) != tf2k::kStored) break;
                    }
                    if (m) {
                        kernel.insert_run_ids(child_id, parent_id, ts + i, run, m);
                        std::fill(codes + i, codes + i + m, child_id);
                        batch.stored += m;
                        i += m - 1;
                        continue;
                    }
                }
                double v[7];
                std::memcpy(v, values + 7 * i, sizeof v);
                int r;
                if (child_id < 0) {  // until a row passes insert()'s checks of the names
                    int32_t pid = 0;
                    r = kernel.insert(p, c, ts[i], v, is_static, pid);
                    if (r >= 0) {
                        std::string_view stripped = c;
                        if (stripped[0] == '/') stripped.remove_prefix(1);
                        parent_id = pid;
                        child_id = r > 0 ? r : kernel.registered_id(stripped);
                    }
                } else {
                    r = Kernel::check_values(v);
                    if (r == tf2k::kStored) r = kernel.insert_ids(child_id, parent_id, ts[i], v, is_static) ? child_id : tf2k::kOld;
                }
                codes[i] = r;
                if (r > 0) {
                    ++batch.stored;
                } else if (r == tf2k::kOld) {
                    ++batch.old;
                }
            }
        }
        if (batch.stored) k.set_authority(child_id, authority);
        if (child_id >= 0) {
            k.remember_id(parent.ptr(), parent_id);
            k.remember_id(child.ptr(), child_id);
        }
        return batch_result(batch, n);
    }

    static void bind(nb::class_<PyKernel>& cls) {
        cls.def("insert", &insert, "parent"_a.none(), "child"_a.none(), "stamp"_a.none(), "tx"_a.none(),
                "ty"_a.none(), "tz"_a.none(), "qx"_a.none(), "qy"_a.none(), "qz"_a.none(), "qw"_a.none(),
                "authority"_a.none(), "is_static"_a)
            // Arrays exactly as given (no silent conversion of float stamps to integers).
            .def("insert_batch", &insert_batch, "parents"_a, "children"_a, "stamps"_a.noconvert(),
                 "rows"_a.noconvert(), "authority"_a.none(), "is_static"_a, "codes"_a.noconvert())
            .def("insert_rows", &insert_rows, "parents"_a, "children"_a, "stamps"_a.noconvert(),
                 "rows"_a.noconvert(), "authority"_a.none(), "is_static"_a)
            .def("insert_trajectory", &insert_trajectory, "parent"_a, "child"_a, "stamps"_a.noconvert(),
                 "rows"_a.noconvert(), "authority"_a.none(), "is_static"_a);
    }

  private:
    // A frame name of a batch not in the name cache: the str (held) and its UTF-8 bytes;
    // id once a stored row registered it.
    struct Pending {
        nb::object name;
        std::string_view text;
        int32_t id = -1;
    };

    struct Batch {
        std::vector<int32_t> codes;
        size_t stored = 0, old = 0;
    };

    static constexpr int32_t kUnread = std::numeric_limits<int32_t>::min();
    static constexpr size_t kRunRows = 128;  // rows of a trajectory checked, then stored at once

    // The BatchResult (the type configure() registered, made by its constructor), its invalid
    // list holding the indices of refused rows (Python replaces them by (index, exception)).
    static nb::object batch_result(const Batch& batch, size_t n) {
        nb::list invalid;
        if (batch.stored + batch.old < n)
            for (size_t i = 0; i < n; ++i)
                if (batch.codes[i] < 0) invalid.append(i);
        return nb::borrow(g_batch_result)(batch.stored, batch.old, invalid);
    }

    // Row k's name: a known id (>= 0), or -(1 + index into pending), or kUnread (not a str).
    // `read`: as pending whatever the cache knows (the row needs insert()'s checks).
    static int32_t name_ref(PyKernel& k, PyObject* o, std::vector<Pending>& pending, bool read = false) {
        int32_t id = 0;
        if (!read && k.cached_id(o, id)) return id;
        for (size_t i = pending.size(); i-- > 0 && pending.size() - i <= 8;)  // names repeat nearby
            if (pending[i].name.ptr() == o) return -1 - static_cast<int32_t>(i);
        std::string_view text;
        if (!str_view(o, text)) return kUnread;
        pending.push_back({nb::borrow(o), text, -1});
        return -static_cast<int32_t>(pending.size());
    }

    // The rows of a batch, in three steps: the names read (GIL held), the rows stored under
    // the exclusive lock (without the GIL for kReleaseGilRows rows or more), then the
    // authorities and the name cache (GIL held, the lock released).
    static void insert_rows_into(PyKernel& k, nb::list& parents, nb::list& children, const int64_t* ts,
                                 const double* values, size_t n, nb::handle authority, bool is_static, Batch& batch) {
        std::vector<int32_t> refs(2 * n);
        std::vector<Pending> pending;
        for (size_t i = 0; i < n; ++i) {
            const auto j = static_cast<Py_ssize_t>(i);
            PyObject* parent = PyList_GET_ITEM(parents.ptr(), j);
            PyObject* child = PyList_GET_ITEM(children.ptr(), j);
            int32_t p = name_ref(k, parent, pending), c = name_ref(k, child, pending);
            if ((p >= 0 || c >= 0) && !(p >= 0 && c > 0 && c != p) && p != kUnread && c != kUnread) {
                p = name_ref(k, parent, pending, true);  // insert() checks (and strips) the names
                c = name_ref(k, child, pending, true);
            }
            refs[2 * i] = p;
            refs[2 * i + 1] = c;
        }
        batch.codes.assign(n, 0);
        int32_t* codes = batch.codes.data();
        {
            const bool release = n >= kReleaseGilRows;
            Writing access(k.lock_, release);
            WithoutGil nogil(release);
            Kernel& kernel = k.k_;
            for (size_t i = 0; i < n; ++i) {
                const int32_t p = refs[2 * i], c = refs[2 * i + 1];
                double v[7];
                std::memcpy(v, values + 7 * i, sizeof v);
                int r;
                if (p == kUnread || c == kUnread) {
                    r = kNameType;
                } else if (p >= 0 && c > 0 && c != p) {
                    // Both names known (a registered child, a different parent): the checks
                    // of insert() on the names are passed already.
                    r = Kernel::check_values(v);
                    if (r == tf2k::kStored) r = kernel.insert_ids(c, p, ts[i], v, is_static) ? c : tf2k::kOld;
                } else {
                    Pending& pp = pending[static_cast<size_t>(-1 - p)];  // both pending here
                    Pending& cp = pending[static_cast<size_t>(-1 - c)];
                    int32_t parent_id = 0;
                    r = kernel.insert(pp.text, cp.text, ts[i], v, is_static, parent_id);
                    if (r >= 0) {
                        std::string_view child = cp.text;
                        if (child[0] == '/') child.remove_prefix(1);
                        pp.id = parent_id;
                        cp.id = r > 0 ? r : kernel.registered_id(child);
                    }
                }
                codes[i] = r;
                if (r > 0) {
                    ++batch.stored;
                } else if (r == tf2k::kOld) {
                    ++batch.old;
                }
            }
        }
        int32_t last = 0;
        for (size_t i = 0; i < n; ++i) {
            if (codes[i] > 0 && codes[i] != last) k.set_authority(last = codes[i], authority);
        }
        for (Pending& p : pending)
            if (p.id >= 0) k.remember_id(p.name.ptr(), p.id);
    }
};
