// Per-frame history: the sliding window of one child frame (dynamic) or its single
// sample (static). Flat storage, oldest first: int64 stamps (ns), seven float64 values per
// sample (tx, ty, tz, qx, qy, qz, qw) and int32 parent ids. Pruning moves a start offset;
// the dead prefix is dropped when the storage is full and a quarter of it is dead. In-order
// inserts append; lookups bisect.
//
// tf2 rules kept (tf2-reference.md §3, §13.2): insert prunes first, relative to the latest
// stamp before the insert (drop stamp < latest - cache_time), then refuses a stamp older
// than that limit; a repeated stamp replaces the sample; t == 0 is the latest sample;
// exact stamps match; one sample matches only its own stamp; between two samples lerp +
// shortest-path slerp, unless their parents differ (the older sample wins).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "rigid.hpp"

namespace tf2k {

// Why a cache could not answer at a time (the exception Python raises).
enum class CacheError : int { None = 0, Empty = 1, Single = 2, Forward = 3, Backward = 4 };

// What a batch lookup remembers per frame between sorted stamps: the last interval found
// and its slerp arc.
struct Hint {
    size_t index = static_cast<size_t>(-1);
    size_t arc_index = static_cast<size_t>(-1);
    Arc arc;
    double inv_span = 0.0;  // 1 / (newer - older) of that interval, ns
};

// Prefetch hints (no-ops where the compiler has none); never fault, whatever the address.
// Write: for memory about to be written.
template <bool Write = false>
inline void prefetch(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p, Write ? 1 : 0, 3);
#else
    (void)p;
#endif
}

inline int64_t saturating_sub(int64_t a, int64_t b) {
    if (b > 0 && a < std::numeric_limits<int64_t>::min() + b) return std::numeric_limits<int64_t>::min();
    if (b < 0 && a > std::numeric_limits<int64_t>::max() + b) return std::numeric_limits<int64_t>::max();
    return a - b;
}

class alignas(64) TimeCache {
  public:
    explicit TimeCache(int64_t cache_time_ns = 10'000'000'000LL, bool is_static = false)
        : window_(cache_time_ns), static_(is_static) {}

    bool is_static() const { return static_; }
    size_t size() const { return stamps_.size() - start_; }
    bool empty() const { return stamps_.size() == start_; }

    // Store one sample (values: 7 doubles, already checked and normalised); false when it
    // is older than the window (tf2's TF_OLD_DATA).
    bool insert(int64_t stamp, const double* values, int32_t parent) {
        forget_hint();
        if (static_) {
            stamps_.assign(1, 0);
            values_.assign(values, values + 7);
            parents_.assign(1, parent);
            start_ = 0;
            return true;
        }
        size_t n = stamps_.size();
        if (n > start_) {
            const int64_t latest = stamps_.back();
            const int64_t limit = saturating_sub(latest, window_);
            if (stamps_[start_] < limit) {
                // A steady stream drops one sample per insert: look at the next one first
                // (a binary search would touch cold cache lines for nothing).
                ++start_;
                if (start_ < n && stamps_[start_] < limit)
                    start_ = static_cast<size_t>(std::lower_bound(stamps_.begin() + static_cast<std::ptrdiff_t>(start_),
                                                                  stamps_.end(), limit) -
                                                 stamps_.begin());
                if (start_ >= 64 && start_ >= n - start_) compact();  // mostly dead: a shrunk stream
                n = stamps_.size();
            }
            if (stamp < limit) return false;
            if (stamp > latest) {
                append(stamp, values, parent);
                return true;
            }
            auto it = std::upper_bound(stamps_.begin() + static_cast<std::ptrdiff_t>(start_), stamps_.end(), stamp);
            size_t i = static_cast<size_t>(it - stamps_.begin());
            if (i > start_ && stamps_[i - 1] == stamp) {  // a repeated stamp replaces (§13.2)
                std::memcpy(&values_[(i - 1) * 7], values, 7 * sizeof(double));
                parents_[i - 1] = parent;
                return true;
            }
            stamps_.insert(stamps_.begin() + static_cast<std::ptrdiff_t>(i), stamp);
            values_.insert(values_.begin() + static_cast<std::ptrdiff_t>(i * 7), values, values + 7);
            parents_.insert(parents_.begin() + static_cast<std::ptrdiff_t>(i), parent);
            return true;
        }
        if (start_) clear_storage();
        append(stamp, values, parent);
        return true;
    }

    // Whether append_run may take samples whose first stamp is `first`: a dynamic cache
    // whose samples are all older (or none).
    bool takes_run_from(int64_t first) const { return !static_ && (empty() || first > stamps_.back()); }

    // Store m checked samples whose stamps rise strictly, the first past every stored one
    // (takes_run_from): the state that m inserts in turn leave, at the cost of one copy.
    // Each insert would prune relative to the latest stamp before it; the last of those
    // limits is the highest, so pruning once with it drops the same samples. Every sample
    // is the newest when it arrives, so none is refused as old.
    void append_run(const int64_t* stamps, const double* values, size_t m, int32_t parent) {
        if (m == 0) return;
        forget_hint();
        const bool had = !empty();
        if (!had && start_) clear_storage();  // as insert: an emptied cache starts afresh
        const int64_t before_last = m >= 2 ? stamps[m - 2] : (had ? stamps_.back() : 0);
        if (stamps_.size() + m > stamps_.capacity()) {
            const size_t live = stamps_.size() - start_;
            if (start_ && start_ * 4 >= live) compact();
            const size_t need = stamps_.size() + m;
            if (need > stamps_.capacity()) {
                const size_t want = need + (start_ ? live / 4 : need / 16) + 8;  // as append
                stamps_.reserve(want);
                values_.reserve(want * 7);
                parents_.reserve(want);
            }
        }
        stamps_.insert(stamps_.end(), stamps, stamps + m);
        values_.insert(values_.end(), values, values + 7 * m);
        parents_.insert(parents_.end(), m, parent);
        if (had || m >= 2) {
            const int64_t limit = saturating_sub(before_last, window_);
            if (stamps_[start_] < limit)
                start_ = static_cast<size_t>(std::lower_bound(stamps_.begin() + static_cast<std::ptrdiff_t>(start_),
                                                              stamps_.end(), limit) -
                                             stamps_.begin());
            if (start_ >= 64 && start_ >= stamps_.size() - start_) compact();  // mostly dead
        }
    }

    // Every insert and clear forgets the interval remembered by single lookups (positions
    // and values can change: compaction, a sample inserted or replaced).
    // (Only the two indices: the arc and the span are read only when arc_index matches.)
    void forget_hint() const {
        own_.index = static_cast<size_t>(-1);
        own_.arc_index = static_cast<size_t>(-1);
    }

    // Ask the memory for what the next insert touches (its storage's both ends), so that
    // the inserts of a batch, each on another frame's cold storage, overlap their cache
    // misses instead of waiting for each in turn. A hint only: nothing is read here but
    // this object (itself prefetched by the caller, Kernel::prefetch_cache).
    void prefetch_storage() const {
        const size_t n = stamps_.size();
        if (n == start_) return;
        prefetch(stamps_.data() + start_);
        prefetch<true>(stamps_.data() + (n - 1));
        const auto end = reinterpret_cast<uintptr_t>(values_.data() + 7 * (n - 1)) + 7 * sizeof(double);
        prefetch<true>(reinterpret_cast<const void*>(end));  // where the next values go
        prefetch<true>(reinterpret_cast<const void*>(end + 7 * sizeof(double) - 1));
        prefetch<true>(parents_.data() + (n - 1));
    }

    // Forget every sample (tf2's clearList); a static cache keeps its sample.
    void clear() {
        forget_hint();
        if (!static_) clear_storage();
    }

    // The sample at t (interpolated), its parent in *parent; false when the cache cannot
    // answer (see error()). hint: what the previous query of a batch found (sorted stamps
    // find their interval at once and reuse its arc), updated.
    bool get(int64_t t, Pose& out, int32_t& parent, Hint* hint = nullptr) const {
        const size_t n = stamps_.size();
        if (!hint) hint = &own_;  // single lookups: the interval (and arc) of the last one
        if (t != 0 && !static_) {
            // A batch's next sorted stamp, most often in the interval of the previous one.
            const size_t h = hint->index;
            if (n >= 2 && h >= start_ && h <= n - 2 && stamps_[h] < t && t < stamps_[h + 1] && parents_[h] == parents_[h + 1] &&
                hint->arc_index == h) {
                const double* a = &values_[h * 7];
                const double num = static_cast<double>(static_cast<uint64_t>(t) - static_cast<uint64_t>(stamps_[h]));
                out = interpolate(a, a + 7, hint->arc, num * hint->inv_span);
                parent = parents_[h];
                return true;
            }
        }
        if (n == start_) return false;
        if (static_) {
            load(start_, out);
            parent = parents_[start_];
            return true;
        }
        const int64_t last = stamps_[n - 1];
        if (t == last || t == 0) {
            load(n - 1, out);
            parent = parents_[n - 1];
            return true;
        }
        if (t > last || n - start_ == 1) return false;
        const int64_t first = stamps_[start_];
        if (t <= first) {
            if (t < first) return false;
            load(start_, out);
            parent = parents_[start_];
            return true;
        }
        const size_t i = older_index(t, hint);
        const int64_t older = stamps_[i];
        if (older == t || parents_[i] != parents_[i + 1]) {
            load(i, out);
            parent = parents_[i];
            return true;
        }
        // (t - older) and (newer - older) are positive: exact as unsigned differences.
        const double num = static_cast<double>(static_cast<uint64_t>(t) - static_cast<uint64_t>(older));
        const double den = static_cast<double>(static_cast<uint64_t>(stamps_[i + 1]) - static_cast<uint64_t>(older));
        const double* a = &values_[i * 7];
        if (hint->arc_index != i) {
            hint->arc = make_arc(a + 3, a + 10);
            hint->arc_index = i;
            hint->inv_span = 1.0 / den;
        }
        out = interpolate(a, a + 7, hint->arc, num * hint->inv_span);
        parent = parents_[i];
        return true;
    }

    // The parent at t (the older neighbour's), 0 when get(t) would fail.
    int32_t parent_at(int64_t t) const {
        const size_t n = stamps_.size();
        if (n == start_) return 0;
        if (static_) return parents_[start_];
        const int64_t last = stamps_[n - 1];
        if (t == last || t == 0) return parents_[n - 1];
        if (t > last || n - start_ == 1 || t < stamps_[start_]) return 0;
        return parents_[older_index(t, nullptr)];
    }

    // Why get(t) failed, and the stamp the message names (0 for an empty cache).
    CacheError error(int64_t t, int64_t& stamp) const {
        const size_t n = stamps_.size();
        if (n == start_ || static_) {
            stamp = 0;
            return CacheError::Empty;
        }
        if (n - start_ == 1) {
            stamp = stamps_[start_];
            return CacheError::Single;
        }
        if (t > stamps_[n - 1]) {
            stamp = stamps_[n - 1];
            return CacheError::Forward;
        }
        stamp = stamps_[start_];
        return CacheError::Backward;
    }

    // (latest stamp, its parent), (0, 0) when empty; a static sample's stamp is 0.
    int64_t latest_stamp() const { return empty() || static_ ? 0 : stamps_.back(); }
    int32_t latest_parent() const { return empty() ? 0 : parents_.back(); }
    int64_t oldest_stamp() const { return empty() || static_ ? 0 : stamps_[start_]; }

    // Sample k (0 = oldest live) for tools and tests.
    int64_t stamp_at(size_t k) const { return stamps_[start_ + k]; }
    const double* values_at(size_t k) const { return &values_[(start_ + k) * 7]; }
    int32_t parent_of(size_t k) const { return parents_[start_ + k]; }

    size_t memory_bytes() const {
        return stamps_.capacity() * sizeof(int64_t) + values_.capacity() * sizeof(double) +
               parents_.capacity() * sizeof(int32_t);
    }

  private:
    void load(size_t i, Pose& out) const {
        const double* v = &values_[i * 7];
        out.t[0] = v[0];
        out.t[1] = v[1];
        out.t[2] = v[2];
        out.q[0] = v[3];
        out.q[1] = v[4];
        out.q[2] = v[5];
        out.q[3] = v[6];
    }

    // Index i with stamps[i] <= t < stamps[i + 1], for first < t < last.
    size_t older_index(int64_t t, Hint* hint) const {
        const size_t n = stamps_.size();
        if (hint) {
            size_t h = hint->index;  // npos (all ones) before the first query
            if (n >= 2 && h >= start_ && h <= n - 2 && stamps_[h] <= t) {
                // Sorted queries: the same interval, or one of the next few.
                for (int step = 0; step < 4 && h + 1 < n; ++step, ++h) {
                    if (t < stamps_[h + 1]) {
                        hint->index = h;
                        return h;
                    }
                }
            }
        }
        auto it = std::upper_bound(stamps_.begin() + static_cast<std::ptrdiff_t>(start_), stamps_.end(), t);
        const size_t i = static_cast<size_t>(it - stamps_.begin()) - 1;
        if (hint) hint->index = i;
        return i;
    }

    void append(int64_t stamp, const double* values, int32_t parent) {
        if (stamps_.size() == stamps_.capacity()) {
            // A steady stream prunes one sample per insert. The live samples move down only
            // once a quarter of the storage is dead (at most 4 moves per insert); below that,
            // room for a quarter more. (Compacting whenever anything was dead moved the whole
            // window on every insert of a stream whose window had filled the storage.)
            const size_t live = stamps_.size() - start_;
            if (start_ && start_ * 4 >= live) compact();
            if (stamps_.size() == stamps_.capacity()) {
                // Filling without pruning grows by a sixteenth (not double): memory per
                // sample stays close to 68 B.
                const size_t want = stamps_.size() + (start_ ? live / 4 : stamps_.size() / 16) + 8;
                stamps_.reserve(want);
                values_.reserve(want * 7);
                parents_.reserve(want);
            }
        }
        stamps_.push_back(stamp);
        values_.insert(values_.end(), values, values + 7);
        parents_.push_back(parent);
    }

    void compact() {
        const auto s = static_cast<std::ptrdiff_t>(start_);
        stamps_.erase(stamps_.begin(), stamps_.begin() + s);
        values_.erase(values_.begin(), values_.begin() + s * 7);
        parents_.erase(parents_.begin(), parents_.begin() + s);
        start_ = 0;
    }

    void clear_storage() {
        std::vector<int64_t>().swap(stamps_);
        std::vector<double>().swap(values_);
        std::vector<int32_t>().swap(parents_);
        start_ = 0;
    }

    // Laid out for inserts (the object is aligned to a cache line): what every insert reads
    // in the first line, the values and the hint's indices it writes in the second.
    size_t start_ = 0;
    std::vector<int64_t> stamps_;
    std::vector<int32_t> parents_;
    int64_t window_;
    std::vector<double> values_;
    bool static_;
    mutable Hint own_;  // single lookups run with the GIL held: one at a time
};

}  // namespace tf2k
