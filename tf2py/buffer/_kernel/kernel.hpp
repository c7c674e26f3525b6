// The transform kernel: the frame registry, one TimeCache per child frame, and the ONE
// walk of the frame tree (tf2's walkToTopParent) that every query uses: single and batch
// lookups, the fixed-frame form, can_transform, the latest common time, chain, and the
// frames a waiting request watches. No Python here: the binding (binding.cpp) converts
// arguments and Python formats tf2's messages from the Error this returns.
#pragma once

#include <cmath>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rigid.hpp"
#include "time_cache.hpp"

namespace tf2k {

constexpr int kMaxGraphDepth = 1000;  // tf2's MAX_GRAPH_DEPTH: more links means a loop
constexpr double kQuaternionTolerance = 0.01;
const char* const kNoParent = "NO_PARENT";

// Why an insert was refused (Python names the field in tf2py's wording).
enum InsertResult : int {
    kStored = 1,
    kOld = 0,
    kEmptyChild = -1,
    kEmptyParent = -2,
    kSelf = -3,
    kReservedChild = -4,
    kNotFinite = -5,
    kNotUnit = -6,
    kNotSimple = -8,  // (binding) an argument Python must check and convert
};

enum class ErrorCode : int { None = 0, Frame = 1, Loop = 2, Connectivity = 3, Extrapolation = 4 };

// What went wrong in a query; Python turns it into tf2's exception and message.
struct Error {
    ErrorCode code = ErrorCode::None;
    int argument = 0;      // Frame: which argument (0 target, 1 source, 2 fixed)
    CacheError kind = CacheError::None;  // Extrapolation: why the cache could not answer
    int64_t time = 0;      // Extrapolation: the time asked for
    int64_t stamp = 0;     // Extrapolation: the cache's stamp the message names
    int32_t source = 0;    // the walk's source and target frames (for messages)
    int32_t target = 0;
};

// One link of a walk: frame -> parent at the walk's time.
struct Link {
    int32_t frame;
    int32_t parent;
    int64_t stamp;  // latest stamp (common-time walks)
    Pose pose;      // pose walks
};

enum class Meeting { TargetAbove, SourceAbove, Both };

// The links a walk passed, below the lowest common ancestor.
struct Path {
    std::vector<Link> source;  // source upwards
    std::vector<Link> target;  // target upwards
    Meeting meeting = Meeting::Both;
};

// What a walk fetches per link.
enum class Gather { Pose, Parent, Latest };

class Kernel {
  public:
    explicit Kernel(int64_t cache_time_ns) : window_(cache_time_ns) {
        names_.emplace_back(kNoParent);
        ids_.emplace(names_.front(), 0);
        caches_.emplace_back(window_, false);
        has_cache_.push_back(kNoCache);
    }

    Kernel(const Kernel&) = delete;  // ids_ holds views of names_
    Kernel& operator=(const Kernel&) = delete;

    int64_t cache_time() const { return window_; }
    size_t frame_count() const { return names_.size(); }
    const std::string& name(int32_t id) const { return names_[static_cast<size_t>(id)]; }
    bool valid_id(int64_t id) const { return id > 0 && static_cast<size_t>(id) < names_.size(); }
    bool has_cache(int32_t id) const { return has_cache_[static_cast<size_t>(id)] == kCache; }
    // Whether the id's name was forgotten (forget): no longer a frame, never given out again.
    bool forgotten(int32_t id) const { return has_cache_[static_cast<size_t>(id)] == kForgotten; }
    const TimeCache& cache(int32_t id) const { return caches_[static_cast<size_t>(id)]; }

    // The id a lookup accepts for this name, or 0 (unknown, empty, leading '/', NO_PARENT).
    int32_t lookup_id(std::string_view name) const {
        if (name.empty() || name[0] == '/') return 0;
        return registered_id(name);
    }

    // The id of exactly this name, or 0 (tf2's lookupFrameNumber: no stripping, no checks;
    // a name stored with a leading '/', from a frame id given as "//a", is found here).
    int32_t registered_id(std::string_view name) const {
        auto it = ids_.find(name);
        return it == ids_.end() ? 0 : it->second;
    }

    // Whether a name is registered at all (tf2's _frameExists: no stripping).
    bool registered(std::string_view name) const { return name != kNoParent && ids_.count(name) != 0; }

    // Numeric checks and normalisation of 7 values in place (InsertResult on failure).
    static int check_values(double* v) {
        for (int k = 0; k < 7; ++k) {
            if (!std::isfinite(v[k])) return kNotFinite;
        }
        const double n2 = v[3] * v[3] + v[4] * v[4] + v[5] * v[5] + v[6] * v[6];
        if (!(std::fabs(n2 - 1.0) < kQuaternionTolerance)) return kNotUnit;
        if (n2 != 1.0) {
            const double s = 1.0 / std::sqrt(n2);
            for (int k = 3; k < 7; ++k) v[k] *= s;
        }
        canonical_sign(v + 3);
        return kStored;
    }

    // Check and store one sample. Returns the child's id (> 0) when stored, kOld when older
    // than the window, or a negative InsertResult (nothing stored, nothing registered).
    int insert(std::string_view parent, std::string_view child, int64_t stamp, double* values, bool is_static) {
        int32_t parent_id = 0;
        return insert(parent, child, stamp, values, is_static, parent_id);
    }

    // The same, telling the parent's id too (when stored or too old).
    int insert(std::string_view parent, std::string_view child, int64_t stamp, double* values, bool is_static,
               int32_t& parent_id) {
        if (!parent.empty() && parent[0] == '/') parent.remove_prefix(1);  // strip one leading '/'
        if (!child.empty() && child[0] == '/') child.remove_prefix(1);
        if (child.empty()) return kEmptyChild;
        if (parent.empty()) return kEmptyParent;
        if (child == parent) return kSelf;
        if (child == kNoParent) return kReservedChild;
        const int checked = check_values(values);
        if (checked != kStored) return checked;
        const int32_t c = register_name(child);  // child first, then parent, as tf2
        parent_id = register_name(parent);
        return insert_ids(c, parent_id, stamp, values, is_static) ? c : kOld;
    }

    // Prefetch hints for a batch of inserts (TimeCache::prefetch_storage): `prefetch_cache` asks
    // for a frame's cache object, some rows ahead; `prefetch_storage`, fewer rows ahead, once
    // the object has arrived, for the storage it points to. Ids out of range are ignored.
    void prefetch_cache(int32_t id) const {
        const auto c = static_cast<size_t>(id);
        if (c >= caches_.size()) return;
        const auto* p = reinterpret_cast<const char*>(&caches_[c]);
        tf2k::prefetch<true>(p);
        tf2k::prefetch<true>(p + 64);
    }
    void prefetch_storage(int32_t id) const {
        const auto c = static_cast<size_t>(id);
        if (c < caches_.size() && has_cache_[c] == kCache) caches_[c].prefetch_storage();
    }

    // Store checked values for registered ids.
    bool insert_ids(int32_t child_id, int32_t parent_id, int64_t stamp, const double* values, bool is_static) {
        const size_t c = static_cast<size_t>(child_id);
        if (has_cache_[c] != kCache || caches_[c].is_static() != is_static) {
            // (an id forgotten while an insert held it: nothing is stored under it again)
            if (has_cache_[c] == kForgotten) return false;
            // A change of kind (static <-> dynamic) replaces the cache (ROS 2 rule).
            caches_[c] = TimeCache(window_, is_static);
            has_cache_[c] = kCache;
        }
        return caches_[c].insert(stamp, values, parent_id);
    }

    // A run of checked dynamic samples of one registered child, stored at once: whether its
    // cache takes a run starting at `first` (TimeCache::takes_run_from; if not, insert the
    // samples one by one), and the store itself.
    bool takes_run(int32_t child_id, int64_t first) const {
        const size_t c = static_cast<size_t>(child_id);
        return has_cache_[c] == kCache && caches_[c].takes_run_from(first);
    }
    void insert_run_ids(int32_t child_id, int32_t parent_id, const int64_t* stamps, const double* values, size_t m) {
        caches_[static_cast<size_t>(child_id)].append_run(stamps, values, m, parent_id);
    }

    int32_t register_name(std::string_view name) {
        auto it = ids_.find(name);
        if (it != ids_.end()) return it->second;
        const auto id = static_cast<int32_t>(names_.size());
        names_.emplace_back(name);
        ids_.emplace(names_.back(), id);  // a view of the deque's string, which never moves
        caches_.emplace_back(window_, false);
        has_cache_.push_back(kNoCache);
        return id;
    }

    // Forget all non-static data; frames stay known.
    void clear() {
        for (auto& c : caches_) c.clear();
    }

    // Forget the static transform of one frame (tf2py fleet: a robot gone for good); false
    // when the frame has none. The name stays registered, as tf2 never forgets a name.
    bool drop_static(int32_t id) {
        const size_t c = static_cast<size_t>(id);
        if (has_cache_[c] != kCache || !caches_[c].is_static()) return false;
        caches_[c] = TimeCache(window_, false);
        has_cache_[c] = kNoCache;
        return true;
    }

    // Forget a frame whole (tf2py fleet: a robot gone for good): its data, static or dynamic,
    // and its name, so that a lookup no longer finds it (tf2 itself never forgets a name).
    // The id is never given out again: a sample still naming it as a parent (of another
    // frame) then leads nowhere, as a parent without data does; the name, registered again,
    // gets a new id. False when the id is not a frame's (or already forgotten).
    bool forget(int32_t id) {
        if (!valid_id(id) || forgotten(id)) return false;
        const size_t c = static_cast<size_t>(id);
        const auto it = ids_.find(names_[c]);
        if (it != ids_.end() && it->second == id) ids_.erase(it);
        caches_[c] = TimeCache(window_, false);
        has_cache_[c] = kForgotten;
        return true;
    }

    // ---- the walk (tf2's walkToTopParent) ------------------------------------------------

    // Walk from source and target up to where they meet, at time t (not 0 for Pose and
    // Parent walks; Latest walks use each cache's latest sample). target == -1 walks the
    // source up to its root. Fills path with the links below the lowest common ancestor.
    template <Gather G>
    Error walk(int32_t target, int32_t source, int64_t t, Path& path, Hint* hints = nullptr) const {
        path.source.clear();
        path.target.clear();
        Error error;
        error.source = source;
        error.target = target;
        int32_t frame = source;
        int32_t top = source;
        int depth = 0;
        bool source_failed = false;
        Error source_error;
        while (true) {
            if (frame == target) {
                path.meeting = Meeting::TargetAbove;
                return error;
            }
            Link link;
            const int got = gather<G>(frame, t, link, hints);
            if (got <= 0) {  // a root (no cache, or NO_PARENT), or no data at t
                top = frame;
                if (got < 0) {
                    source_failed = true;
                    source_error = extrapolation(frame, t, source, target);
                }
                break;
            }
            path.source.push_back(link);
            frame = link.parent;
            if (++depth > kMaxGraphDepth) return loop(source, target);
        }
        frame = target;
        depth = 0;
        while (frame != top && target >= 0) {
            if (frame == source) {
                path.meeting = Meeting::SourceAbove;
                path.source.clear();
                return error;
            }
            Link link;
            const int got = gather<G>(frame, t, link, hints);
            if (got < 0) return extrapolation(frame, t, source, target);
            if (got == 0) break;
            path.target.push_back(link);
            frame = link.parent;
            if (++depth > kMaxGraphDepth) return loop(source, target);
        }
        if (target < 0) {
            path.meeting = Meeting::Both;
            return error;
        }
        if (frame != top) {
            if (source_failed) return source_error;
            error.code = ErrorCode::Connectivity;
            return error;
        }
        // Links above the lowest common ancestor are shared: never needed.
        while (!path.source.empty() && !path.target.empty() &&
               path.source.back().frame == path.target.back().frame) {
            path.source.pop_back();
            path.target.pop_back();
        }
        path.meeting = Meeting::Both;
        return error;
    }

    // tf2's getLatestCommonTime: the minimum over the latest stamps of the dynamic links
    // between the two frames (static links and samples stamped 0 ignored); 0 if all static.
    Error common_time(int32_t target, int32_t source, int64_t& t, Path& path) const {
        if (target == source) {
            t = has_cache(source) ? cache(source).latest_stamp() : 0;
            return Error{};
        }
        Error e = walk<Gather::Latest>(target, source, 0, path);
        if (e.code != ErrorCode::None) return e;
        int64_t common = 0;
        bool any = false;
        for (const auto* side : {&path.source, &path.target}) {
            for (const Link& l : *side) {
                if (l.stamp != 0 && (!any || l.stamp < common)) {
                    common = l.stamp;
                    any = true;
                }
            }
        }
        t = any ? common : 0;
        return e;
    }

    // T(target <- source) at t (0 = the latest common time, resolved into *used).
    Error lookup(int32_t target, int32_t source, int64_t t, Pose& out, int64_t& used, Path& path,
                 Hint* hints = nullptr) const {
        if (target == source) {
            out = identity_pose();
            used = t == 0 ? (has_cache(target) ? cache(target).latest_stamp() : 0) : t;
            return Error{};
        }
        if (t == 0) {
            Error e = common_time(target, source, t, path);
            if (e.code != ErrorCode::None) return e;
        }
        used = t;
        Error e = walk<Gather::Pose>(target, source, t, path, hints);
        if (e.code == ErrorCode::None) out = combine(path);
        return e;
    }

    // Whether lookup would succeed (fetching parents only, as tf2's CanTransformAccum).
    bool can_transform(int32_t target, int32_t source, int64_t t, Path& path) const {
        if (target == source) return true;
        if (t == 0) {
            if (common_time(target, source, t, path).code != ErrorCode::None) return false;
        }
        return walk<Gather::Parent>(target, source, t, path).code == ErrorCode::None;
    }

    // T(target <- fixed at target_time) ∘ T(fixed <- source at source_time).
    Error lookup_full(int32_t target, int64_t target_time, int32_t source, int64_t source_time, int32_t fixed,
                      Pose& out, int64_t& used, Path& path) const {
        Pose a = identity_pose();
        int64_t ignored = 0;
        if (fixed != source) {
            Error e = lookup(fixed, source, source_time, a, ignored, path);
            if (e.code != ErrorCode::None) return e;
        }
        Pose b = identity_pose();
        Error e = lookup(target, fixed, target_time, b, used, path);
        if (e.code != ErrorCode::None) return e;
        out = compose(b, a);
        return e;
    }

    // Frame ids a lookup passes through at t, source first (ROS 1 _chainAsVector).
    Error chain(int32_t target, int32_t source, int64_t t, std::vector<int32_t>& out, Path& path) const {
        out.clear();
        if (target == source) return Error{};
        if (t == 0) {
            Error e = common_time(target, source, t, path);
            if (e.code != ErrorCode::None) return e;
        }
        Error e = walk<Gather::Pose>(target, source, t, path);
        if (e.code != ErrorCode::None) return e;
        for (const Link& l : path.source) out.push_back(l.frame);
        if (path.meeting == Meeting::TargetAbove) {
            out.push_back(target);
        } else if (path.meeting == Meeting::SourceAbove) {
            // The target links run from the target up to the source: reverse them.
            out.push_back(source);
            for (auto it = path.target.rbegin(); it != path.target.rend(); ++it) out.push_back(it->frame);
        } else {
            out.push_back(path.source.empty() ? source : path.source.back().parent);
            for (auto it = path.target.rbegin(); it != path.target.rend(); ++it) out.push_back(it->frame);
        }
        return e;
    }

    // The frames the walk from `frame` upwards visits at t (0: the latest data), frame
    // included: what a waiting request watches.
    void ancestors(int32_t frame, int64_t t, std::vector<int32_t>& out, Path& path) const {
        if (t == 0) {
            walk<Gather::Latest>(-1, frame, 0, path);
        } else {
            walk<Gather::Parent>(-1, frame, t, path);
        }
        out.push_back(frame);
        for (const Link& l : path.source) out.push_back(l.parent);
    }

    // Batch lookup: (n, 4, 4) row-major matrices for n stamps (time_at(k): stamp k in ns,
    // 0 = the latest common time), the same walk per stamp. On failure, *failed is the first
    // stamp (in order) that fails.
    template <class TimeAt>
    Error lookup_many(int32_t target, int32_t source, TimeAt time_at, size_t n, double* matrices,
                      size_t& failed) const {
        Path path;
        Pose out;
        int64_t used = 0;
        std::vector<Hint> hints(names_.size());  // per frame: interval and arc of the last stamp
        for (size_t k = 0; k < n; ++k) {
            Error e = lookup(target, source, time_at(k), out, used, path, hints.data());
            if (e.code != ErrorCode::None) {
                failed = k;
                return e;
            }
            to_matrix(out, matrices + 16 * k);
        }
        return Error{};
    }

    // The composed transform of a pose walk's path: T(target <- source).
    static Pose combine(const Path& path) {
        Pose up = identity_pose();  // T(lca <- source)
        bool first = true;
        for (const Link& l : path.source) {
            up = first ? l.pose : compose(l.pose, up);
            first = false;
        }
        if (path.target.empty()) return up;
        Pose down = identity_pose();  // T(lca <- target)
        first = true;
        for (const Link& l : path.target) {
            down = first ? l.pose : compose(l.pose, down);
            first = false;
        }
        if (path.source.empty()) return inverse(down);
        return compose(inverse(down), up);
    }

  private:
    // 1: a link (parent != 0); 0: a root (no cache, or a NO_PARENT sample; Latest walks:
    // also an empty cache); -1: no data at t.
    template <Gather G>
    int gather(int32_t frame, int64_t t, Link& link, Hint* hints) const {
        const size_t f = static_cast<size_t>(frame);
        if (has_cache_[f] != kCache) return 0;
        const TimeCache& c = caches_[f];
        link.frame = frame;
        if (G == Gather::Latest) {
            if (c.empty()) return 0;
            link.parent = c.latest_parent();
            link.stamp = c.latest_stamp();
            return link.parent != 0 ? 1 : 0;
        } else if (G == Gather::Parent) {
            link.parent = c.parent_at(t);
            link.stamp = 0;
            return link.parent != 0 ? 1 : -1;
        } else {
            if (!c.get(t, link.pose, link.parent, hints ? hints + f : nullptr)) return -1;
            link.stamp = 0;
            return link.parent != 0 ? 1 : 0;
        }
    }

    Error extrapolation(int32_t frame, int64_t t, int32_t source, int32_t target) const {
        Error e;
        e.code = ErrorCode::Extrapolation;
        e.time = t;
        e.kind = caches_[static_cast<size_t>(frame)].error(t, e.stamp);
        e.source = source;
        e.target = target;
        return e;
    }

    static Error loop(int32_t source, int32_t target) {
        Error e;
        e.code = ErrorCode::Loop;
        e.source = source;
        e.target = target;
        return e;
    }

    int64_t window_;
    std::deque<std::string> names_;                   // by id; a deque: names never move
    std::unordered_map<std::string_view, int32_t> ids_;  // views of names_
    std::vector<TimeCache> caches_;
    // By id: whether the frame has a cache (a sample stored, and not dropped since), or was
    // forgotten (forget).
    static constexpr uint8_t kNoCache = 0, kCache = 1, kForgotten = 2;
    std::vector<uint8_t> has_cache_;
};

}  // namespace tf2k
