#include "store/direct_record.hpp"

#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "store/base_dir.hpp"
#include "store/layout.hpp"
#include "util/json_text.hpp"
#include "util/text.hpp"

namespace bekc {

namespace {

// 2: "absent_dirs". A bekc that reads only 1 would skip them, and take the
// paths they group for checked: it sees a 2 as a broken file (a miss). A 1
// (no groups) reads as ever.
constexpr int kRecordFormat = 2;
constexpr int kOldestRecordFormat = 1;
// Eight records of a few thousand headers each fit many times over.
constexpr uint64_t kMaxRecordFileBytes = 64 << 20;

using nlohmann::json;

json to_json(const DirectRecord& record) {
    json files = json::array();
    for (const auto& f : record.files) {
        files.push_back({{"path", f.path},
                         {"size", f.stat.size},
                         {"mtime_ns", f.stat.mtime_ns},
                         {"ctime_ns", f.stat.ctime_ns},
                         {"xxh128", f.xxh128}});
    }
    json dirs = json::array();
    for (const auto& d : record.absent_dirs) {
        dirs.push_back({{"path", d.dir},
                        {"dev", d.stamp.dev},
                        {"ino", d.stamp.ino},
                        {"mtime_ns", d.stamp.mtime_ns},
                        {"ctime_ns", d.stamp.ctime_ns},
                        {"names", d.names}});
    }
    return {{"key", record.key},
            {"written_ns", record.written_ns},
            {"files", files},
            {"absent", record.absent},
            {"absent_dirs", dirs}};
}

// The record file as the lookup reads it, straight into records: a warm hit
// reads one record file of a few hundred paths on every load, and building
// nlohmann's document of it first took most of an in-process hit's time.
// Reads the JSON grammar (any key order, unknown keys skipped, the last of
// two equal keys wins, as nlohmann's parser), with integers only where the
// writer puts integers; anything else fails, which the caller treats as a
// broken file: a miss.
class RecordReader {
  public:
    explicit RecordReader(std::string_view text) : s_(text) {}

    bool read(std::vector<DirectRecord>& out) {
        bool format_seen = false, records_seen = false;
        bool ok = object([&](const std::string& key) {
            if (key == "format") {
                int64_t format = 0;
                return integer(format) &&
                       (format_seen = format >= kOldestRecordFormat && format <= kRecordFormat);
            }
            if (key == "records") {
                out.clear();
                records_seen = true;
                return array([&] {
                    out.emplace_back();
                    return record(out.back());
                });
            }
            return skip_value();
        });
        skip_space();
        return ok && format_seen && records_seen && i_ == s_.size();
    }

  private:
    bool record(DirectRecord& r) {
        bool key = false, written = false, files = false, absent = false;
        return object([&](const std::string& name) {
                   if (name == "key") return key = string(r.key) && is_valid_key(r.key);
                   if (name == "written_ns") return written = integer(r.written_ns);
                   if (name == "files") {
                       r.files.clear();
                       return files = array([&] {
                                  r.files.emplace_back();
                                  return file(r.files.back());
                              });
                   }
                   if (name == "absent") {
                       r.absent.clear();
                       return absent = array([&] {
                                  r.absent.emplace_back();
                                  return path(r.absent.back());
                              });
                   }
                   if (name == "absent_dirs") {
                       r.absent_dirs.clear();
                       return array([&] {
                           r.absent_dirs.emplace_back();
                           return dir(r.absent_dirs.back());
                       });
                   }
                   return skip_value();
               }) &&
               key && written && files && absent;
    }

    bool dir(AbsentDir& d) {
        bool path = false, dev = false, ino = false, mtime = false, ctime = false, names = false;
        return object([&](const std::string& name) {
                   if (name == "path") return path = this->path(d.dir);
                   if (name == "dev") return dev = unsigned_integer(d.stamp.dev);
                   if (name == "ino") return ino = unsigned_integer(d.stamp.ino);
                   if (name == "mtime_ns") return mtime = integer(d.stamp.mtime_ns);
                   if (name == "ctime_ns") return ctime = integer(d.stamp.ctime_ns);
                   if (name == "names") {
                       d.names.clear();
                       return names = array([&] {
                                  d.names.emplace_back();
                                  return string(d.names.back()) && is_name_below(d.names.back());
                              });
                   }
                   return skip_value();
               }) &&
               path && dev && ino && mtime && ctime && names;
    }

    bool file(RecordedFile& f) {
        bool path = false, size = false, mtime = false, ctime = false, hash = false;
        f.stat.is_regular = true;
        return object([&](const std::string& name) {
                   if (name == "path") return path = this->path(f.path);
                   if (name == "size") return size = unsigned_integer(f.stat.size);
                   if (name == "mtime_ns") return mtime = integer(f.stat.mtime_ns);
                   if (name == "ctime_ns") return ctime = integer(f.stat.ctime_ns);
                   if (name == "xxh128") return hash = string(f.xxh128) && is_hex(f.xxh128, 32);
                   return skip_value();
               }) &&
               path && size && mtime && ctime && hash;
    }

    // A path as the writer records it: absolute, or under the base directory
    // ("$BEKC_BASE_DIR/..."), and without a NUL, which no file name holds
    // (the system would take only what comes before it).
    bool path(std::string& out) {
        return string(out) && (out.starts_with('/') || out.starts_with(BaseDir::kToken)) &&
               out.find('\0') == std::string::npos;
    }

    void skip_space() {
        while (i_ < s_.size() &&
               (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
            ++i_;
    }

    bool take(char c) {
        skip_space();
        if (i_ >= s_.size() || s_[i_] != c) return false;
        ++i_;
        return true;
    }

    // `member(key)` reads the member's value.
    template <typename Member>
    bool object(Member&& member) {
        if (!take('{')) return false;
        if (take('}')) return true;
        std::string key;
        do {
            if (!string(key) || !take(':') || !member(key)) return false;
        } while (take(','));
        return take('}');
    }

    template <typename Element>
    bool array(Element&& element) {
        if (!take('[')) return false;
        if (take(']')) return true;
        do {
            if (!element()) return false;
        } while (take(','));
        return take(']');
    }

    bool hex4(uint32_t& v) {
        std::optional<uint32_t> digits = escape_digits(s_.substr(i_, 4));
        if (!digits) return false;
        i_ += 4;
        v = *digits;
        return true;
    }

    static void append_utf8(std::string& out, uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    // One UTF-8 sequence at i_, copied to `out`.
    bool utf8_sequence(std::string& out) {
        size_t n = utf8_length_at(s_, i_);
        out.append(s_.substr(i_, n));
        i_ += n;
        return n > 0;
    }

    bool string(std::string& out) {
        if (!take('"')) return false;
        out.clear();
        while (i_ < s_.size()) {
            size_t plain = i_;
            while (plain < s_.size() && s_[plain] != '"' && s_[plain] != '\\' &&
                   static_cast<unsigned char>(s_[plain]) >= 0x20 &&
                   static_cast<unsigned char>(s_[plain]) < 0x80)
                ++plain;
            out.append(s_.substr(i_, plain - i_));
            i_ = plain;
            if (i_ >= s_.size()) return false;
            unsigned char c = static_cast<unsigned char>(s_[i_]);
            if (c == '"') {
                ++i_;
                return true;
            }
            if (c < 0x20) return false;
            if (c >= 0x80) {
                if (!utf8_sequence(out)) return false;
                continue;
            }
            if (++i_ >= s_.size()) return false;  // the backslash
            char e = s_[i_++];
            switch (e) {
                case '"':
                    out += '"';
                    break;
                case '\\':
                    out += '\\';
                    break;
                case '/':
                    out += '/';
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    uint32_t cp = 0;
                    if (!hex4(cp)) return false;
                    // A lone low surrogate: a byte that is not UTF-8
                    // (util/json_text.hpp), or not a record file.
                    if (cp >= 0xDC00 && cp <= 0xDFFF) {
                        std::optional<char> byte = escaped_byte(cp);
                        if (!byte) return false;
                        out += *byte;
                        break;
                    }
                    if (cp >= 0xD800 && cp <= 0xDBFF) {
                        uint32_t low = 0;
                        if (s_.size() - i_ < 2 || s_[i_] != '\\' || s_[i_ + 1] != 'u') return false;
                        i_ += 2;
                        if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    }
                    append_utf8(out, cp);
                    break;
                }
                default:
                    return false;
            }
        }
        return false;
    }

    // A JSON integer: no fraction, no exponent, within uint64_t; `negative`
    // tells its sign.
    bool magnitude(uint64_t& v, bool& negative) {
        skip_space();
        negative = i_ < s_.size() && s_[i_] == '-';
        if (negative) ++i_;
        size_t start = i_;
        v = 0;
        while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
            auto digit = static_cast<uint64_t>(s_[i_] - '0');
            if (v > (UINT64_MAX - digit) / 10) return false;
            v = v * 10 + digit;
            ++i_;
        }
        size_t digits = i_ - start;
        if (digits == 0 || (digits > 1 && s_[start] == '0')) return false;
        return i_ >= s_.size() || (s_[i_] != '.' && s_[i_] != 'e' && s_[i_] != 'E');
    }

    bool unsigned_integer(uint64_t& out) {
        bool negative = false;
        return magnitude(out, negative) && !negative;
    }

    bool integer(int64_t& out) {
        uint64_t v = 0;
        bool negative = false;
        if (!magnitude(v, negative)) return false;
        if (negative ? v > uint64_t(INT64_MAX) + 1 : v > uint64_t(INT64_MAX)) return false;
        out = negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
        return true;
    }

    bool literal(std::string_view word) {
        skip_space();
        if (s_.substr(i_, word.size()) != word) return false;
        i_ += word.size();
        return true;
    }

    // A value of a key the reader does not use; a number in full JSON form.
    bool skip_value(int depth = 0) {
        if (depth > 64) return false;
        skip_space();
        if (i_ >= s_.size()) return false;
        switch (s_[i_]) {
            case '{':
                return object([&](const std::string&) { return skip_value(depth + 1); });
            case '[':
                return array([&] { return skip_value(depth + 1); });
            case '"': {
                std::string ignored;
                return string(ignored);
            }
            case 't':
                return literal("true");
            case 'f':
                return literal("false");
            case 'n':
                return literal("null");
            default:
                return skip_number();
        }
    }

    bool skip_number() {
        auto digits = [&] {
            size_t start = i_;
            while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
            return i_ > start;
        };
        if (i_ < s_.size() && s_[i_] == '-') ++i_;
        if (i_ < s_.size() && s_[i_] == '0')
            ++i_;
        else if (!digits())
            return false;
        if (i_ < s_.size() && s_[i_] == '.' && (++i_, !digits())) return false;
        if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
            ++i_;
            if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
            if (!digits()) return false;
        }
        return true;
    }

    std::string_view s_;
    size_t i_ = 0;
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

std::vector<DirectRecord> parse_direct_records(std::string_view text) {
    std::vector<DirectRecord> records;
    if (!RecordReader(text).read(records)) return {};
    return records;
}

std::vector<DirectRecord> read_direct_records(const CacheDir& cache, const fs::path& file) {
    auto text = cache.read(file, kMaxRecordFileBytes);
    if (!text) return {};
    return parse_direct_records(*text);
}

std::expected<void, Error> write_direct_records(const CacheDir& cache, const fs::path& file,
                                                const std::vector<DirectRecord>& records) {
    json j = {{"format", kRecordFormat}, {"records", json::array()}};
    for (const auto& r : records) j["records"].push_back(to_json(r));
    return cache.write(file, dump_json(j) + "\n");
}

}  // namespace bekc
