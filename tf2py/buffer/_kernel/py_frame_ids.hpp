// A robot's frame ids for Kernel.insert_cdr (py_cdr.hpp): the ids Python admitted, their
// prefixed names, the kernel's ids of those names, and the ids of the robot's last sample.
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
    // a row names a frame id not admitted, `where` that row. A robot sends the same frame
    // ids in the same order sample after sample: they are compared, in one pass over
    // contiguous memory, with the last sample's, and looked up one by one only when they
    // differ (the hash lookups cost as much as the inserts themselves, measured).
    bool entries_of(const std::vector<tf2k::CdrRow>& rows, size_t first, std::vector<Pair>& out, uint32_t& where) {
        const size_t n = rows.size() - first;
        if (n == last_.size() && same_as_last(rows, first)) {
            out.insert(out.end(), last_.begin(), last_.end());
            return true;
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
        if (n <= kLastRows) {  // remembered for the next sample
            last_.assign(out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
            last_text_.clear();
            last_sizes_.clear();
            for (size_t i = first; i < rows.size(); ++i)
                for (const std::string_view frame : {rows[i].parent, rows[i].child}) {
                    last_text_.append(frame);
                    last_sizes_.push_back(static_cast<uint32_t>(frame.size()));
                }
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
    static constexpr size_t kLastRows = 1024;  // longer samples are not remembered

    // Whether rows [first, end) name the frame ids of the last sample remembered, in order
    // (`last_text_`: its parents and children, concatenated; `last_sizes_`: their lengths).
    bool same_as_last(const std::vector<tf2k::CdrRow>& rows, size_t first) const {
        const char* text = last_text_.data();
        const uint32_t* size = last_sizes_.data();
        for (size_t k = 0; k < last_.size(); ++k) {
            const tf2k::CdrRow& row = rows[first + k];
            for (const std::string_view frame : {row.parent, row.child}) {
                if (frame.size() != *size++ || (!frame.empty() && std::memcmp(text, frame.data(), frame.size()) != 0))
                    return false;
                text += frame.size();
            }
        }
        return true;
    }

    std::string prefix_;
    std::vector<Pair> last_;  // the entries of the last sample looked up one by one
    std::string last_text_;
    std::vector<uint32_t> last_sizes_;
    std::deque<Entry> entries_;
    std::unordered_map<std::string_view, Entry*> index_;
    uint64_t serial_ = 0;
    nb::object names_;  // names(), until the next admit
};
