#include "remote/remote_record.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/hash.hpp"
#include "store/layout.hpp"
#include "util/fs.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

constexpr int kRemoteRecordFormat = 1;

using nlohmann::json;

bool is_sha256(const std::string& s) {
    return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

// Absolute and normal: "/a/../b" could name a different file than the
// writer meant.
bool is_absolute_path(const std::string& s) {
    fs::path p(s);
    return p.is_absolute() && p.lexically_normal() == p && s.find('\0') == std::string::npos;
}

// "$BEKC_BASE_DIR/rel", normal: a path under the writer's base directory,
// or beside it when the compilers reached it from there by a relative path
// ("$BEKC_BASE_DIR/../common/val.h"; store/base_dir.hpp, graph/keys.cpp).
// A record may name any absolute path anyway.
bool is_base_path(const std::string& s) {
    const std::string prefix = std::string(BaseDir::kToken) + "/";
    if (s.compare(0, prefix.size(), prefix) != 0 || s.find('\0') != std::string::npos) return false;
    fs::path rel(s.substr(prefix.size()));
    return !rel.empty() && rel.is_relative() && rel.lexically_normal() == rel &&
           rel.filename() != "..";
}

bool is_recorded_path(const std::string& s) {
    return is_absolute_path(s) || is_base_path(s);
}

std::expected<DirectInputs, Error> record_from_json(const json& r) {
    if (!r.is_object()) return fail(ErrorKind::Cache, "a record is not an object");
    DirectInputs in;
    in.key = r.value("key", "");
    if (!is_valid_key(in.key)) return fail(ErrorKind::Cache, "a record has no valid key");
    for (const auto& f : r.at("files")) {
        std::string path = f.at("path").get<std::string>(), sha = f.at("sha256").get<std::string>();
        if (!is_recorded_path(path))
            return fail(ErrorKind::Cache, "'" + path + "' is not an absolute path");
        if (!is_sha256(sha))
            return fail(ErrorKind::Cache, "the SHA-256 of '" + path + "' is malformed");
        in.dependencies.push_back({fs::path(path), sha});
    }
    for (const auto& a : r.at("absent")) {
        std::string path = a.get<std::string>();
        if (!is_recorded_path(path))
            return fail(ErrorKind::Cache, "'" + path + "' is not an absolute path");
        in.must_not_exist.emplace_back(path);
    }
    return in;
}

// lstat, as store/direct.cpp: a dangling symlink shadows a header too.
bool exists_here(const fs::path& path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
}

struct OutOfTime {};

struct LocalHash {
    std::string sha256;   // "" (which matches no SHA-256) unless hashed
    std::string refused;  // why a file that exists here was not hashed
};

// SHA-256 of this machine's `path` when it is a regular file of at most
// check.max_file_bytes that can be read without waiting. OutOfTime when the
// deadline passes first.
std::expected<LocalHash, OutOfTime> local_sha256(const fs::path& path, const LocalCheck& check) {
    using Clock = std::chrono::steady_clock;
    if (Clock::now() >= check.deadline) return std::unexpected(OutOfTime{});
    // Missing here is a plain miss (another machine's paths); stat does not
    // open, so it cannot wait on a FIFO.
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return LocalHash{};
    // Regular files only, opened with O_NONBLOCK (a FIFO does not wait for a
    // writer) and checked against the limit before the first read.
    auto fd = open_regular_at(AT_FDCWD, path, path, ReadOptions{check.max_file_bytes, true});
    if (!fd) return LocalHash{"", fd.error().message};
    // Some files that stat as regular can still block a read (/proc/kmsg):
    // keep O_NONBLOCK, and a read that would wait means no match.
    ::fcntl(fd->get(), F_SETFL, ::fcntl(fd->get(), F_GETFL) | O_NONBLOCK);
    Sha256 sha;
    std::vector<char> buffer(1 << 20);
    uint64_t total = 0;
    for (;;) {
        ssize_t n = ::read(fd->get(), buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return LocalHash{"", errno_message("read", path, errno)};
        if (n == 0) break;
        // The size was checked at open; the file may grow while it is read.
        total += static_cast<uint64_t>(n);
        if (total > check.max_file_bytes)
            return LocalHash{"", "cannot read " + path.string() + ": it grows past the limit"};
        sha.update(std::string_view(buffer.data(), static_cast<size_t>(n)));
        if (Clock::now() >= check.deadline) return std::unexpected(OutOfTime{});
    }
    return LocalHash{sha.final_hex(), ""};
}

}  // namespace

std::expected<std::vector<DirectInputs>, Error> parse_remote_records(std::string_view text) {
    auto j = parse_json(text).value_or(nullptr);
    if (!j.is_object()) return fail(ErrorKind::Cache, "not a JSON object");
    std::vector<DirectInputs> records;
    try {
        if (j.at("format") != kRemoteRecordFormat) return fail(ErrorKind::Cache, "not format 1");
        for (const auto& r : j.at("records")) {
            auto record = record_from_json(r);
            if (!record) return std::unexpected(record.error());
            if (records.size() < kMaxDirectRecords) records.push_back(std::move(*record));
        }
    } catch (const json::exception& e) {
        return fail(ErrorKind::Cache, std::string("malformed: ") + e.what());
    }
    return records;
}

std::string render_remote_records(const std::vector<DirectInputs>& records) {
    json list = json::array();
    for (const auto& r : records) {
        json files = json::array(), absent = json::array();
        for (const auto& d : r.dependencies)
            files.push_back({{"path", d.path.string()}, {"sha256", d.sha256}});
        for (const auto& p : r.must_not_exist) absent.push_back(p.string());
        list.push_back({{"key", r.key}, {"files", files}, {"absent", absent}});
    }
    json doc = {{"format", kRemoteRecordFormat}, {"records", list}};
    return dump_json(doc) + "\n";
}

std::vector<DirectInputs> merge_remote_records(std::vector<DirectInputs> existing,
                                               const DirectInputs& latest) {
    std::erase_if(existing, [&](const DirectInputs& r) { return r.key == latest.key; });
    existing.insert(existing.begin(), latest);
    if (existing.size() > kMaxDirectRecords) existing.resize(kMaxDirectRecords);
    return existing;
}

std::expected<LocalMatch, Error> match_local_files(const std::vector<DirectInputs>& records,
                                                   const LocalCheck& check, const BaseDir& base) {
    LocalMatch result;
    // Records of one direct key mostly list the same headers: hash each once.
    std::map<fs::path, std::string> hashes;
    for (const auto& record : records) {
        bool holds = true;
        for (const auto& d : record.dependencies) {
            // A path under the writer's base is this checkout's file.
            auto here = base.show(d.path.string());
            if (!here) {
                holds = false;
                break;
            }
            fs::path path(*here);
            auto it = hashes.find(path);
            if (it == hashes.end()) {
                auto local = local_sha256(path, check);
                if (!local) return fail(ErrorKind::Cache, "hashing " + path.string());
                if (!local->refused.empty()) result.refused.push_back(local->refused);
                it = hashes.emplace(path, std::move(local->sha256)).first;
            }
            if (it->second != d.sha256) {
                holds = false;
                break;
            }
        }
        holds = holds && std::none_of(record.must_not_exist.begin(), record.must_not_exist.end(),
                                      [&](const fs::path& p) {
                                          auto here = base.show(p.string());
                                          return !here || exists_here(*here);
                                      });
        if (holds) {
            result.record = record;
            break;
        }
    }
    return result;
}

}  // namespace bekc
