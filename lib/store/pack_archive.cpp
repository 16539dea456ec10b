#include "store/pack_archive.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include <fmt/format.h>

#include "run/runner.hpp"
#include "store/hash.hpp"
#include "store/layout.hpp"
#include "store/pack_marker.hpp"
#include "store/zip_writer.hpp"
#include "util/version.hpp"

namespace bekc {

namespace {

// What is local to the machine that made the pack: its temporaries, locks
// and counters.
bool local_only(const fs::path& top) {
    std::string name = top.string();
    return name == CacheLayout::tmp().string() || name == CacheLayout::locks().string() ||
           name.rfind("stats", 0) == 0;
}

std::expected<void, Error> collect_files(const fs::path& pack_dir, const fs::path& rel,
                                         std::vector<fs::path>& out) {
    std::error_code ec;
    fs::directory_iterator it(pack_dir / rel, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        fs::path child = rel / it->path().filename();
        if (rel.empty() && local_only(child)) continue;
        auto status = it->symlink_status(ec);
        if (ec) break;
        if (fs::is_directory(status)) {
            if (auto sub = collect_files(pack_dir, child, out); !sub) return sub;
        } else if (fs::is_regular_file(status)) {
            out.push_back(child);
        } else {
            return fail(ErrorKind::Cache,
                        fmt::format("{} is {}: a pack holds only directories and regular files",
                                    (pack_dir / child).string(),
                                    fs::is_symlink(status) ? "a symbolic link" : "a special file"));
        }
    }
    if (ec)
        return fail(ErrorKind::Cache,
                    fmt::format("cannot read {}: {}", (pack_dir / rel).string(), ec.message()));
    return {};
}

// The pack's "pack" object, which both archives need.
std::expected<PackInfo, Error> require_pack(const fs::path& pack_dir) {
    auto info = read_pack_info(pack_dir);
    if (!info) return std::unexpected(info.error());
    if (!*info)
        return fail(ErrorKind::Usage,
                    fmt::format("{} is not a pack: its {} has no \"pack\" object (bekc pack "
                                "writes one)",
                                pack_dir.string(), kMarkerFile));
    return std::move(**info);
}

// A temporary beside `target`, which the writer renames into place.
fs::path temp_beside(const fs::path& target, std::string_view what) {
    return target.parent_path() /
           fmt::format(".{}.{}.{}", target.filename().string(), what, ::getpid());
}

std::expected<fs::path, Error> rename_into_place(const fs::path& temp, const fs::path& target) {
    std::error_code ec;
    fs::rename(temp, target, ec);
    if (!ec) return target;
    std::string why = ec.message();
    fs::remove(temp, ec);
    return fail(ErrorKind::Cache, fmt::format("cannot write {}: {}", target.string(), why));
}

std::string hex_to_bytes(const std::string& hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    return out;
}

// RECORD's line for a file the wheel holds.
std::string record_line(const std::string& name, std::string_view bytes) {
    return fmt::format("{},sha256={},{}\n", name, base64url_nopad(hex_to_bytes(sha256_hex(bytes))),
                       bytes.size());
}

// The escaped distribution name: runs of anything but letters and digits
// become one '_' (the wheel specification's file-name escaping).
std::string distribution(const std::string& pack_name) {
    std::string out = "bekc_pack_";
    for (char c : pack_name) {
        if (std::isalnum(static_cast<unsigned char>(c)))
            out.push_back(c);
        else if (out.back() != '_')
            out.push_back('_');
    }
    return out;
}

std::expected<void, Error> check_wheel(const PackWheel& w) {
    if (std::string why = pack_name_problem(w.name); !why.empty())
        return fail(ErrorKind::Usage, fmt::format("pack name \"{}\" {}", w.name, why));
    if (std::string why = wheel_version_problem(w.version); !why.empty())
        return fail(ErrorKind::Usage, fmt::format("pack version \"{}\" {}", w.version, why));
    static const std::regex tag("[A-Za-z0-9_.]+");
    if (!std::regex_match(w.platform_tag, tag))
        return fail(ErrorKind::Usage,
                    fmt::format("platform tag \"{}\" may hold only letters, digits, '_' and '.' "
                                "(e.g. manylinux_2_28_x86_64, linux_x86_64)",
                                w.platform_tag));
    return {};
}

// The .dist-info's files but RECORD, by name.
std::vector<std::pair<std::string, std::string>> dist_info_files(const PackWheel& w) {
    std::string metadata = fmt::format(
        "Metadata-Version: 2.1\nName: {}\nVersion: {}\nSummary: bekc pack {}: prebuilt kernel "
        "libraries, a read-only bekc cache\n",
        distribution(w.name), w.version, w.name);
    std::string wheel = fmt::format(
        "Wheel-Version: 1.0\nGenerator: bekc {}\nRoot-Is-Purelib: false\nTag: py3-none-{}\n",
        kVersion, w.platform_tag);
    return {{"METADATA", metadata}, {"WHEEL", wheel}};
}

// Every file into `zip`, then the .dist-info with its RECORD.
std::expected<void, Error> fill_wheel(ZipWriter& zip, const fs::path& pack_dir,
                                      const std::vector<fs::path>& files, const PackWheel& w) {
    std::string record;
    for (const fs::path& rel : files) {
        auto bytes = read_file(pack_dir / rel, ReadOptions{uint64_t(4) << 30, false});
        if (!bytes) return std::unexpected(bytes.error());
        std::string name = "bekc_packs/" + w.name + "/" + rel.generic_string();
        if (auto added = zip.add(name, *bytes); !added) return added;
        record += record_line(name, *bytes);
    }
    std::string info_dir = fmt::format("{}-{}.dist-info/", distribution(w.name), w.version);
    for (const auto& [file, text] : dist_info_files(w)) {
        if (auto added = zip.add(info_dir + file, text); !added) return added;
        record += record_line(info_dir + file, text);
    }
    record += info_dir + "RECORD,,\n";
    if (auto added = zip.add(info_dir + "RECORD", record); !added) return added;
    return zip.finish();
}

}  // namespace

std::expected<std::vector<fs::path>, Error> pack_files(const fs::path& pack_dir) {
    std::vector<fs::path> files;
    if (auto found = collect_files(pack_dir, {}, files); !found)
        return std::unexpected(found.error());
    std::sort(files.begin(), files.end());
    return files;
}

std::string wheel_version_problem(const std::string& version) {
    static const std::regex pep440(
        "[0-9]+(\\.[0-9]+)*((a|b|rc)[0-9]+)?(\\.post[0-9]+)?(\\.dev[0-9]+)?");
    if (std::regex_match(version, pep440)) return {};
    return "is not a version a wheel can carry: numbers joined by '.', then optionally "
           "a1/b1/rc1, .post1, .dev1 (PEP 440; e.g. 1.0, 2.1.3rc1)";
}

std::string pack_wheel_file_name(const PackWheel& w) {
    return fmt::format("{}-{}-py3-none-{}.whl", distribution(w.name), w.version, w.platform_tag);
}

std::expected<fs::path, Error> write_pack_wheel(const fs::path& pack_dir, const PackWheel& w,
                                                const fs::path& out_dir) {
    if (auto ok = check_wheel(w); !ok) return std::unexpected(ok.error());
    if (auto info = require_pack(pack_dir); !info) return std::unexpected(info.error());
    auto files = pack_files(pack_dir);
    if (!files) return std::unexpected(files.error());
    fs::path target = out_dir / pack_wheel_file_name(w);
    fs::path temp = temp_beside(target, "tmp");
    auto zip = ZipWriter::create(temp);
    if (!zip) return std::unexpected(zip.error());
    if (auto filled = fill_wheel(*zip, pack_dir, *files, w); !filled) {
        ::unlink(temp.c_str());
        return std::unexpected(filled.error());
    }
    return rename_into_place(temp, target);
}

std::expected<fs::path, Error> write_pack_tarball(const fs::path& pack_dir,
                                                  const fs::path& out_file, Runner& runner,
                                                  const fs::path& tar) {
    auto info = require_pack(pack_dir);
    if (!info) return std::unexpected(info.error());
    auto files = pack_files(pack_dir);
    if (!files) return std::unexpected(files.error());
    std::string list;
    for (const fs::path& rel : *files) list += rel.string() + '\0';
    fs::path list_file = temp_beside(out_file, "list"), temp = temp_beside(out_file, "tmp");
    if (auto w = write_atomic(list_file, list); !w) return std::unexpected(w.error());
    Command tar_command;
    tar_command.argv = {tar.string(),
                        "--create",
                        "--gzip",
                        "--file",
                        temp.string(),
                        "--directory",
                        pack_dir.string(),
                        "--no-recursion",
                        "--null",
                        "--files-from",
                        list_file.string(),
                        "--transform",
                        "s,^," + info->name + "/,",
                        "--owner=0",
                        "--group=0",
                        "--numeric-owner"};
    tar_command.description = "tar " + out_file.filename().string();
    ProcessResult result = runner.run_one(tar_command);
    ::unlink(list_file.c_str());
    if (!result.ok()) {
        ::unlink(temp.c_str());
        return fail(ErrorKind::Cache, fmt::format("cannot write {}: {} {}:\n{}", out_file.string(),
                                                  tar.string(), result.describe(), result.output));
    }
    return rename_into_place(temp, out_file);
}

}  // namespace bekc
