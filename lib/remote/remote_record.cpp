#include "remote/remote_record.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "store/hash.hpp"
#include "store/layout.hpp"

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

std::expected<DirectInputs, std::string> record_from_json(const json& r) {
    if (!r.is_object()) return std::unexpected("a record is not an object");
    DirectInputs in;
    in.key = r.value("key", "");
    if (!is_valid_key(in.key)) return std::unexpected("a record has no valid key");
    for (const auto& f : r.at("files")) {
        std::string path = f.at("path").get<std::string>(), sha = f.at("sha256").get<std::string>();
        if (!is_absolute_path(path))
            return std::unexpected("'" + path + "' is not an absolute path");
        if (!is_sha256(sha)) return std::unexpected("the SHA-256 of '" + path + "' is malformed");
        in.dependencies.push_back({fs::path(path), sha});
    }
    for (const auto& a : r.at("absent")) {
        std::string path = a.get<std::string>();
        if (!is_absolute_path(path))
            return std::unexpected("'" + path + "' is not an absolute path");
        in.must_not_exist.emplace_back(path);
    }
    return in;
}

// lstat, as store/direct.cpp: a dangling symlink shadows a header too.
bool exists_here(const fs::path& path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

std::expected<std::vector<DirectInputs>, std::string> parse_remote_records(std::string_view text) {
    auto j = json::parse(text, nullptr, false);
    if (!j.is_object()) return std::unexpected("not a JSON object");
    std::vector<DirectInputs> records;
    try {
        if (j.at("format") != kRemoteRecordFormat) return std::unexpected("not format 1");
        for (const auto& r : j.at("records")) {
            auto record = record_from_json(r);
            if (!record) return std::unexpected(record.error());
            if (records.size() < kMaxDirectRecords) records.push_back(std::move(*record));
        }
    } catch (const json::exception& e) {
        return std::unexpected(std::string("malformed: ") + e.what());
    }
    return records;
}

std::expected<std::string, std::string> render_remote_records(
    const std::vector<DirectInputs>& records) {
    json list = json::array();
    for (const auto& r : records) {
        json files = json::array(), absent = json::array();
        for (const auto& d : r.dependencies)
            files.push_back({{"path", d.path.string()}, {"sha256", d.sha256}});
        for (const auto& p : r.must_not_exist) absent.push_back(p.string());
        list.push_back({{"key", r.key}, {"files", files}, {"absent", absent}});
    }
    json doc = {{"format", kRemoteRecordFormat}, {"records", list}};
    try {
        return doc.dump() + "\n";
    } catch (const json::exception&) {
        return std::unexpected("a dependency path is not valid UTF-8");
    }
}

std::vector<DirectInputs> merge_remote_records(std::vector<DirectInputs> existing,
                                               const DirectInputs& latest) {
    std::erase_if(existing, [&](const DirectInputs& r) { return r.key == latest.key; });
    existing.insert(existing.begin(), latest);
    if (existing.size() > kMaxDirectRecords) existing.resize(kMaxDirectRecords);
    return existing;
}

std::optional<DirectInputs> match_local_files(const std::vector<DirectInputs>& records) {
    // Records of one direct key mostly list the same headers: hash each once.
    std::map<fs::path, std::string> hashes;
    auto sha_of = [&](const fs::path& path) -> const std::string& {
        auto it = hashes.find(path);
        if (it == hashes.end()) it = hashes.emplace(path, sha256_file(path).value_or("")).first;
        return it->second;
    };
    for (const auto& record : records) {
        bool holds =
            std::all_of(record.dependencies.begin(), record.dependencies.end(),
                        [&](const DirectDependency& d) { return sha_of(d.path) == d.sha256; }) &&
            std::none_of(record.must_not_exist.begin(), record.must_not_exist.end(), exists_here);
        if (holds) return record;
    }
    return std::nullopt;
}

}  // namespace bekc
