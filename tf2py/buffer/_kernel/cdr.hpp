// tf2_msgs/msg/TFMessage in XCDR1 (plain CDR), as rmw implementations send it: the one
// decoder of tf2py (the ROS 2 and Zenoh buses, the fleet and bags all read through it). Pure
// C++, no Python: the binding (py_cdr.hpp) turns rows into columns or inserts them.
//
// A sample is the 4-byte encapsulation header (0x00 0x01: little-endian, 0x00 0x00: big-
// endian; the options bytes are ignored), then sequence<geometry_msgs/TransformStamped>:
//
//     uint32 count
//     per transform:  int32 sec, uint32 nanosec   (aligned to 4)
//                     string frame_id             uint32 length with the NUL, bytes, NUL
//                     string child_frame_id       (aligned to 4)
//                     float64 x 7                 translation xyz, rotation xyzw (aligned to 8)
//
// Alignment counts from the end of the header. Padding bytes are never read (ROS 2 leaves them
// uninitialised). Every read is checked against the sample's size first: a malformed sample
// is refused whole (a CdrStatus and the transform where it went wrong), never read past its
// end, and nothing of it is kept.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace tf2k {

// Why a sample was refused (Python words it and counts it by cause).
enum CdrStatus : int {
    kCdrOk = 0,
    kCdrShort = 1,         // shorter than the header and the count
    kCdrEncoding = 2,      // not XCDR1 (an unknown or XCDR2 encapsulation)
    kCdrTooMany = 3,       // a count over kCdrMaxTransforms
    kCdrTruncated = 4,     // a count, length or value past the end of the sample
    kCdrBadString = 5,     // a string of length 0, or not ending in NUL
    kCdrNotUtf8 = 6,       // a frame id that is not UTF-8
    kCdrNameTooLong = 7,   // a frame id over the caller's limit of characters
    kCdrTrailing = 8,      // more than 7 bytes after the last transform
};

// A TFMessage holding more transforms than this is refused (as the ZeroMQ bus does).
constexpr uint32_t kCdrMaxTransforms = 1000000;
// The fewest bytes one transform takes (8 stamp, 4 + 1 frame_id, 4 + 1 child, 56 values).
constexpr uint64_t kCdrTransformMin = 8 + 5 + 5 + 56;

// One decoded transform; the names point into the sample (without their NUL).
struct CdrRow {
    std::string_view parent, child;
    int64_t stamp;  // nanoseconds: sec * 1e9 + nanosec
    double values[7];  // tx ty tz qx qy qz qw
};

// The characters of strict UTF-8 text (as Python's bytes.decode: no overlong forms, no
// surrogates, nothing past U+10FFFF), or -1 when it is not UTF-8.
inline int64_t utf8_chars(std::string_view s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const size_t n = s.size();
    int64_t chars = 0;
    for (size_t i = 0; i < n; ++chars) {
        const unsigned c = p[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t extra;
        unsigned low = 0x80, high = 0xBF;  // the allowed range of the second byte
        if (c >= 0xC2 && c <= 0xDF) {
            extra = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            extra = 2;
            if (c == 0xE0) low = 0xA0;   // overlong
            if (c == 0xED) high = 0x9F;  // surrogates
        } else if (c >= 0xF0 && c <= 0xF4) {
            extra = 3;
            if (c == 0xF0) low = 0x90;   // overlong
            if (c == 0xF4) high = 0x8F;  // past U+10FFFF
        } else {
            return -1;
        }
        if (n - i <= extra) return -1;
        if (p[i + 1] < low || p[i + 1] > high) return -1;
        for (size_t k = 2; k <= extra; ++k)
            if ((p[i + k] & 0xC0) != 0x80) return -1;
        i += extra + 1;
    }
    return chars;
}

// Reads a sample's fields in its byte order, every read checked against its size.
class CdrReader {
  public:
    CdrReader(const uint8_t* data, size_t size) : p_(data), size_(size) {}

    // The header: kCdrOk, and the byte order it names.
    int start() {
        if (size_ < 8) return kCdrShort;
        if (p_[0] != 0 || p_[1] > 1) return kCdrEncoding;
        swap_ = p_[1] == 0;  // CDR_BE on a little-endian machine
        at_ = 4;
        return kCdrOk;
    }

    void align(size_t to) { at_ += (to - (at_ - 4) % to) % to; }
    size_t position() const { return at_; }
    size_t left() const { return at_ <= size_ ? size_ - at_ : 0; }

    bool u32(uint32_t& out) {
        if (left() < 4) return false;
        std::memcpy(&out, p_ + at_, 4);
        if (swap_) out = __builtin_bswap32(out);
        at_ += 4;
        return true;
    }

    bool f64(double* out, size_t count) {
        if (left() < 8 * count) return false;
        std::memcpy(out, p_ + at_, 8 * count);
        if (swap_) {
            for (size_t k = 0; k < count; ++k) {
                uint64_t bits;
                std::memcpy(&bits, out + k, 8);
                bits = __builtin_bswap64(bits);
                std::memcpy(out + k, &bits, 8);
            }
        }
        at_ += 8 * count;
        return true;
    }

    // A CDR string (aligned to 4): its bytes without the NUL.
    int string(std::string_view& out) {
        align(4);
        uint32_t length = 0;
        if (!u32(length)) return kCdrTruncated;
        if (length > left()) return kCdrTruncated;
        if (length == 0 || p_[at_ + length - 1] != 0) return kCdrBadString;
        out = std::string_view(reinterpret_cast<const char*>(p_ + at_), length - 1);
        at_ += length;
        return kCdrOk;
    }

  private:
    const uint8_t* p_;
    size_t size_;
    size_t at_ = 0;
    bool swap_ = false;
};

// A frame id's check: UTF-8, and at most max_chars characters (0: no limit).
inline int check_name(std::string_view name, size_t max_chars) {
    if (max_chars && name.size() <= max_chars) max_chars = 0;  // bytes >= characters: fine
    const int64_t chars = utf8_chars(name);
    if (chars < 0) return kCdrNotUtf8;
    if (max_chars && static_cast<size_t>(chars) > max_chars) return kCdrNameTooLong;
    return kCdrOk;
}

// The count of transforms a sample says it holds; false when its header or count is unreadable.
inline bool tf_message_count(const uint8_t* data, size_t size, uint32_t& count) {
    CdrReader in(data, size);
    return in.start() == kCdrOk && in.u32(count);
}

// Appends the transforms of one TFMessage sample to rows; kCdrOk, or why it was refused
// (rows then as they were). `count`: the transforms the sample says it holds (0 before it is
// read); `failed`: the transform where it went wrong (the count for the count's own errors).
inline int decode_tf_message(const uint8_t* data, size_t size, size_t max_chars, std::vector<CdrRow>& rows,
                             uint32_t& failed, uint32_t& count) {
    failed = count = 0;
    CdrReader in(data, size);
    int status = in.start();
    if (status != kCdrOk) return status;
    if (!in.u32(count)) return kCdrShort;
    failed = count;
    if (count > kCdrMaxTransforms) return kCdrTooMany;
    if (count * kCdrTransformMin > in.left()) return kCdrTruncated;
    const size_t first = rows.size();
    rows.resize(first + count);
    for (uint32_t i = 0; i < count; ++i) {
        failed = i;
        CdrRow& row = rows[first + i];
        uint32_t sec = 0, nanosec = 0;
        in.align(4);
        status = !in.u32(sec) || !in.u32(nanosec) ? static_cast<int>(kCdrTruncated) : in.string(row.parent);
        if (status == kCdrOk) status = in.string(row.child);
        if (status == kCdrOk) status = check_name(row.parent, max_chars);
        if (status == kCdrOk) status = check_name(row.child, max_chars);
        if (status == kCdrOk) {
            in.align(8);
            if (!in.f64(row.values, 7)) status = kCdrTruncated;
        }
        if (status != kCdrOk) {
            rows.resize(first);
            return status;
        }
        row.stamp = static_cast<int64_t>(static_cast<int32_t>(sec)) * 1000000000 + nanosec;
    }
    // A serialiser may pad the end to a multiple of 4 or 8; anything more is not a TFMessage.
    if (in.left() > 7) {
        failed = count;
        rows.resize(first);
        return kCdrTrailing;
    }
    return kCdrOk;
}

}  // namespace tf2k
