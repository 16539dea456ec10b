#include "store/direct_record.hpp"

#include <nlohmann/json.hpp>

namespace bekc {

namespace {

constexpr int kRecordFormat = 1;
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
    return {{"key", record.key},
            {"written_ns", record.written_ns},
            {"files", files},
            {"absent", record.absent}};
}

DirectRecord from_json(const json& j) {
    DirectRecord record{j.at("key").get<std::string>(),
                        j.at("written_ns").get<int64_t>(),
                        {},
                        j.at("absent").get<std::vector<std::string>>()};
    for (const auto& f : j.at("files")) {
        FileStat stat{f.at("size").get<uint64_t>(), f.at("mtime_ns").get<int64_t>(),
                      f.at("ctime_ns").get<int64_t>(), true};
        record.files.push_back(
            {f.at("path").get<std::string>(), stat, f.at("xxh128").get<std::string>()});
    }
    return record;
}

}  // namespace

std::vector<DirectRecord> read_direct_records(const CacheDir& cache, const fs::path& file) {
    auto text = cache.read(file, kMaxRecordFileBytes);
    if (!text) return {};
    auto j = json::parse(*text, nullptr, false);
    std::vector<DirectRecord> records;
    try {
        if (!j.is_object() || j.at("format") != kRecordFormat) return {};
        for (const auto& r : j.at("records")) records.push_back(from_json(r));
    } catch (const json::exception&) {
        return {};
    }
    return records;
}

std::expected<void, Error> write_direct_records(const CacheDir& cache, const fs::path& file,
                                                const std::vector<DirectRecord>& records) {
    json j = {{"format", kRecordFormat}, {"records", json::array()}};
    for (const auto& r : records) j["records"].push_back(to_json(r));
    std::string text;
    try {
        text = j.dump() + "\n";
    } catch (const json::exception&) {
        // JSON strings are UTF-8; a file name that is not cannot be recorded.
        return fail(ErrorKind::Cache,
                    "a dependency path is not valid UTF-8: " + cache.path(file).string());
    }
    return cache.write(file, text);
}

}  // namespace bekc
