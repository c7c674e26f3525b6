// A robot's frame ids for Kernel.insert_cdr (py_cdr.hpp): the ids Python admitted, their
// prefixed names, the kernel's ids of those names, and the layouts of the robot's last samples.
// Part of the binding (binding.cpp includes it once, inside its anonymous namespace, before
// py_cdr.hpp).
#pragma once

// A frame id as a prefixed name: one leading '/' dropped, then the prefix (the fleet's robot
// namespace, "robot7/"; "" for the root namespace), as tf2py.server.fleet.names.prefix_frame.
std::string prefixed_name(std::string_view prefix, std::string_view frame) {
    if (!frame.empty() && frame[0] == '/') frame.remove_prefix(1);
    std::string out;
    out.reserve(prefix.size() + frame.size());
    out.append(prefix).append(frame);
    return out;
}

// One robot's frame ids, as Python admitted them (the fleet bounds them per robot), each with
// its prefixed name and, once a row stored it, its id in the kernel last used.
class FrameIds {
  public:
    explicit FrameIds(std::string prefix) : prefix_(std::move(prefix)) {}
    // Its index and layouts point into its own entries: never copied.
    FrameIds(const FrameIds&) = delete;
    FrameIds& operator=(const FrameIds&) = delete;

    struct Entry {
        int32_t id = -1;  // the name's id in the kernel of serial_ (-1: not yet known)
        std::string frame, name;
    };
    using Pair = std::pair<Entry*, Entry*>;  // a row's (parent, child)

    const std::string& prefix() const { return prefix_; }
    size_t size() const { return entries_.size(); }

    // Admit frame ids (str); how many were new. Not while an insert reads this object.
    size_t admit(nb::list frames) {
        if (busy_) throw nb::value_error("FrameIds.admit: an insert is using these frame ids");
        size_t added = 0;
        for (nb::handle h : frames) {
            std::string_view frame;
            if (!str_view(h.ptr(), frame)) throw nb::type_error("FrameIds.admit: frame ids must be str");
            if (find(frame)) continue;
            entries_.push_back({-1, std::string(frame), prefixed_name(prefix_, frame)});
            index_.emplace(entries_.back().frame, &entries_.back());  // the deque never moves it
            names_ = nb::object();
            ++added;
        }
        return added;
    }

    // The prefixed names of every admitted frame id (a frozenset, made once per change): what
    // a Buffer's waiting requests hear an insert of these frames named.
    nb::object names() {
        if (!names_.is_valid()) {
            nb::list all;
            for (const Entry& e : entries_) all.append(nb::str(e.name.data(), e.name.size()));
            names_ = nb::steal(PyFrozenSet_New(all.ptr()));
            if (!names_.is_valid()) throw nb::python_error();
        }
        return names_;
    }

    Entry* find(std::string_view frame) {
        auto it = index_.find(frame);
        return it == index_.end() ? nullptr : it->second;
    }

    // The entries of rows [first, rows.end()) appended to `out`; false (out unchanged) when
    // a row names a frame id not admitted, `where` that row. A robot sends the same few
    // messages over and over (its joints' frames, its odometry, its localisation), each with
    // the same frame ids in the same order: a sample is compared, in one pass over contiguous
    // memory, with the last kLayouts layouts seen, and its ids looked up one by one only when
    // none matches (the hash lookups cost as much as the inserts themselves, measured).
    bool entries_of(const std::vector<tf2k::CdrRow>& rows, size_t first, std::vector<Pair>& out, uint32_t& where) {
        const size_t n = rows.size() - first;
        for (const Layout& layout : layouts_) {
            if (layout.entries.size() == n && layout.matches(rows, first)) {
                out.insert(out.end(), layout.entries.begin(), layout.entries.end());
                return true;
            }
        }
        const size_t before = out.size();
        for (size_t i = first; i < rows.size(); ++i) {
            Entry* p = find(rows[i].parent);
            Entry* c = p ? find(rows[i].child) : nullptr;
            if (!c) {
                out.resize(before);
                where = static_cast<uint32_t>(i - first);
                return false;
            }
            out.emplace_back(p, c);
        }
        if (n && n <= kLayoutRows) {  // remembered, in place of the oldest layout
            // Built aside and moved in whole: a failed allocation midway leaves the old one.
            Layout layout;
            layout.entries.assign(out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
            for (size_t i = first; i < rows.size(); ++i)
                for (const std::string_view frame : {rows[i].parent, rows[i].child}) {
                    layout.text.append(frame);
                    layout.sizes.push_back(static_cast<uint32_t>(frame.size()));
                }
            layouts_[next_layout_] = std::move(layout);
            next_layout_ = (next_layout_ + 1) % kLayouts;
        }
        return true;
    }

    // The cached ids belong to one kernel: another kernel starts them afresh.
    void use_kernel(uint64_t serial) {
        if (serial == serial_) return;
        for (Entry& e : entries_) e.id = -1;
        serial_ = serial;
    }

    uint64_t busy_ = 0;  // the call of the insert that holds it (set and read with the GIL held)

  private:
    static constexpr size_t kLayouts = 4;  // layouts remembered per robot
    static constexpr size_t kLayoutRows = 1024;  // longer samples are not remembered

    // The frame ids of a sample looked up one by one: its entries, and its parents and
    // children concatenated (`text`) with their lengths (`sizes`).
    struct Layout {
        std::vector<Pair> entries;
        std::string text;
        std::vector<uint32_t> sizes;

        // Whether rows [first, first + entries.size()) name these frame ids, in this order.
        bool matches(const std::vector<tf2k::CdrRow>& rows, size_t first) const {
            const char* at = text.data();
            const uint32_t* size = sizes.data();
            for (size_t k = 0; k < entries.size(); ++k) {
                const tf2k::CdrRow& row = rows[first + k];
                for (const std::string_view frame : {row.parent, row.child}) {
                    if (frame.size() != *size++ || (!frame.empty() && std::memcmp(at, frame.data(), frame.size()) != 0))
                        return false;
                    at += frame.size();
                }
            }
            return true;
        }
    };

    std::string prefix_;
    std::array<Layout, kLayouts> layouts_;
    size_t next_layout_ = 0;
    std::deque<Entry> entries_;
    std::unordered_map<std::string_view, Entry*> index_;
    uint64_t serial_ = 0;
    nb::object names_;  // names(), until the next admit
};
