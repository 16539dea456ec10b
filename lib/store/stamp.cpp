#include "store/stamp.hpp"

#include <nlohmann/json.hpp>

#include "store/hash.hpp"

namespace bekc {

std::expected<LibraryStamp, std::string> LibraryStamp::of(const fs::path& library) {
    auto before = stat_file(library);
    if (!before) return std::unexpected("cannot stat " + library.string());
    auto xxh = xxh128_file(library);
    if (!xxh) return std::unexpected(xxh.error());
    return LibraryStamp{*before, *xxh};
}

std::optional<LibraryStamp> LibraryStamp::read(const fs::path& stamp_file) {
    auto text = read_text(stamp_file);
    if (!text) return std::nullopt;
    auto j = nlohmann::json::parse(*text, nullptr, false);
    if (!j.is_object()) return std::nullopt;
    try {
        LibraryStamp s;
        s.stat.size = j.at("size").get<uint64_t>();
        s.stat.mtime_ns = j.at("mtime_ns").get<int64_t>();
        s.stat.ctime_ns = j.at("ctime_ns").get<int64_t>();
        s.stat.is_regular = true;
        s.xxh128 = j.at("xxh128").get<std::string>();
        return s;
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
}

std::expected<void, std::string> LibraryStamp::write(const fs::path& stamp_file) const {
    nlohmann::json j = {{"size", stat.size},
                        {"mtime_ns", stat.mtime_ns},
                        {"ctime_ns", stat.ctime_ns},
                        {"xxh128", xxh128}};
    return write_atomic(stamp_file, j.dump() + "\n");
}

}  // namespace bekc
