#include "store/direct_record.hpp"

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "store/base_dir.hpp"
#include "store/hash.hpp"
#include "store/layout.hpp"
#include "util/le_bytes.hpp"

namespace bekc {

namespace {

constexpr std::string_view kMagic = "bekc-rec";
// 3: this binary format. 1 and 2 were JSON, in files named ….json.
constexpr uint32_t kRecordFormat = 3;
constexpr size_t kCheckBytes = 8;
// Eight records of a few thousand headers each fit many times over.
constexpr uint64_t kMaxRecordFileBytes = 64 << 20;

// The fields of a record, in the order they are in the file: the one
// description of the format. The writer walks it over a const record,
// appending each field; the reader walks it over an empty one, reading each
// field back and checking it, and fails at the first that is not there or
// not of its kind. So the reader reads exactly what the writer wrote.
template <typename Io, typename Record>
bool record_fields(Io& io, Record& r) {
    return io.key(r.key) && io.i64(r.written_ns) && io.list(r.files, [&](auto& f) {
        return io.path(f.path) && io.u64(f.stat.size) && io.i64(f.stat.mtime_ns) &&
               io.i64(f.stat.ctime_ns) && io.flag(f.stat.is_regular) && io.hash(f.xxh128);
    }) && io.list(r.absent, [&](auto& path) {
        return io.path(path);
    }) && io.list(r.absent_dirs, [&](auto& d) {
        return io.path(d.dir) && io.u64(d.stamp.dev) && io.u64(d.stamp.ino) &&
               io.i64(d.stamp.mtime_ns) && io.i64(d.stamp.ctime_ns) &&
               io.list(d.names, [&](auto& name) { return io.name(name); });
    });
}

// Appends each field; never fails.
class Writer {
  public:
    bool u64(uint64_t v) {
        for (int i = 0; i < 8; ++i) out_ += static_cast<char>(v >> (8 * i));
        return true;
    }
    bool i64(int64_t v) { return u64(static_cast<uint64_t>(v)); }
    bool u32(uint32_t v) {
        for (int i = 0; i < 4; ++i) out_ += static_cast<char>(v >> (8 * i));
        return true;
    }
    bool flag(bool v) {
        out_ += static_cast<char>(v ? 1 : 0);
        return true;
    }
    bool bytes(std::string_view s) {
        u32(static_cast<uint32_t>(s.size()));
        out_.append(s);
        return true;
    }
    bool key(const std::string& s) { return bytes(s); }
    bool hash(const std::string& s) { return bytes(s); }
    bool path(const std::string& s) { return bytes(s); }
    bool name(const std::string& s) { return bytes(s); }
    template <typename T, typename Element>
    bool list(const std::vector<T>& items, Element&& element) {
        u32(static_cast<uint32_t>(items.size()));
        for (const T& item : items) element(item);
        return true;
    }

    std::string& out() { return out_; }

  private:
    std::string out_;
};

// Reads each field back from bytes that may be anything: every read checks
// that it lies inside them, and every string that it is of its kind.
class Reader {
  public:
    explicit Reader(std::string_view in) : in_(in) {}

    bool u64(uint64_t& v) { return fixed(v, 8); }
    bool i64(int64_t& v) {
        uint64_t bits = 0;
        if (!u64(bits)) return false;
        v = static_cast<int64_t>(bits);
        return true;
    }
    bool u32(uint32_t& v) {
        uint64_t wide = 0;
        if (!fixed(wide, 4)) return false;
        v = static_cast<uint32_t>(wide);
        return true;
    }
    bool flag(bool& v) {
        uint64_t byte = 0;
        if (!fixed(byte, 1) || byte > 1) return false;
        v = byte == 1;
        return true;
    }
    bool key(std::string& s) { return bytes(s) && is_valid_key(s); }
    bool hash(std::string& s) { return bytes(s) && is_hex(s, 32); }
    // Absolute, or under the base directory, and without a NUL, which no file
    // name holds (the system would take only what comes before it).
    bool path(std::string& s) {
        return bytes(s) && (s.starts_with('/') || s.starts_with(BaseDir::kToken)) &&
               s.find('\0') == std::string::npos;
    }
    bool name(std::string& s) { return bytes(s) && is_name_below(s); }
    template <typename T, typename Element>
    bool list(std::vector<T>& items, Element&& element) {
        uint32_t n = 0;
        // Every item starts with a string's length: a count past the end
        // fails here, and what is allocated up front stays small whatever
        // the count says.
        if (!u32(n) || n > (in_.size() - at_) / 4) return false;
        items.clear();
        items.reserve(std::min<size_t>(n, 1024));
        for (uint32_t i = 0; i < n; ++i)
            if (!element(items.emplace_back())) return false;
        return true;
    }

    bool at_end() const { return at_ == in_.size(); }

  private:
    bool fixed(uint64_t& v, unsigned width) {
        std::optional<uint64_t> read = read_le(in_, at_, width);
        if (!read) return false;
        v = *read;
        at_ += width;
        return true;
    }
    bool bytes(std::string& s) {
        uint32_t n = 0;
        if (!u32(n) || !span_fits(at_, n, in_.size())) return false;
        s.assign(in_.substr(at_, n));
        at_ += n;
        return true;
    }

    std::string_view in_;
    size_t at_ = 0;
};

}  // namespace

bool is_name_below(std::string_view name) {
    if (name.empty() || name.find('\0') != std::string_view::npos) return false;
    for (size_t start = 0;;) {
        size_t slash = name.find('/', start);
        std::string_view part = name.substr(start, slash - start);
        if (part.empty() || part == "." || part == "..") return false;
        if (slash == std::string_view::npos) return true;
        start = slash + 1;
    }
}

std::string encode_direct_records(const std::vector<DirectRecord>& records) {
    Writer w;
    w.out().append(kMagic);
    w.u32(kRecordFormat);
    w.list(records, [&](const DirectRecord& r) { return record_fields(w, r); });
    w.u64(xxh3_64(w.out()));
    return std::move(w.out());
}

std::optional<std::vector<DirectRecord>> decode_direct_records(std::string_view bytes) {
    if (bytes.size() < kMagic.size() + 4 + kCheckBytes || !bytes.starts_with(kMagic))
        return std::nullopt;
    std::string_view body = bytes.substr(0, bytes.size() - kCheckBytes);
    if (read_le(bytes, body.size(), kCheckBytes) != xxh3_64(body)) return std::nullopt;
    Reader r(body.substr(kMagic.size()));
    uint32_t format = 0;
    std::vector<DirectRecord> records;
    if (!r.u32(format) || format != kRecordFormat ||
        !r.list(records, [&](DirectRecord& record) { return record_fields(r, record); }) ||
        !r.at_end())
        return std::nullopt;
    return records;
}

std::vector<DirectRecord> read_direct_records(const CacheDir& cache, const fs::path& file) {
    auto bytes = cache.read(file, kMaxRecordFileBytes);
    if (!bytes) return {};
    return decode_direct_records(*bytes).value_or(std::vector<DirectRecord>{});
}

std::expected<void, Error> write_direct_records(const CacheDir& cache, const fs::path& file,
                                                const std::vector<DirectRecord>& records) {
    return cache.write(file, encode_direct_records(records));
}

}  // namespace bekc
