#include "prep/build_warnings.hpp"

#include <system_error>

#include "util/fs.hpp"

namespace bekc {

std::vector<Diagnostic> default_stream_warnings(const std::vector<SourceFile>& files) {
    std::vector<Diagnostic> out;
    for (const auto& file : files) {
        if (!file.cuda) continue;
        for (const auto& fn : file.functions) {
            if (fn.has_stream()) continue;
            Location where = fn.annotation;
            if (where.file.empty()) where.file = file.path.string();
            Diagnostic d = make_error(
                file.text, where,
                "function '" + fn.name +
                    "' has no 'stream' parameter, so its kernels launch on the default stream, "
                    "not on XLA's",
                "add 'stream' to the spec and an int64_t stream parameter, and launch with "
                "<<<grid, block, 0, (cudaStream_t)stream>>>; if the default stream is meant, "
                "build with --allow-default-stream");
            d.severity = Severity::Warning;
            out.push_back(std::move(d));
        }
    }
    return out;
}

std::vector<std::string> missing_include_dir_warnings(const std::vector<std::string>& given,
                                                      const std::vector<std::string>& resolved) {
    std::vector<std::string> out;
    for (size_t i = 0; i < given.size() && i < resolved.size(); ++i) {
        std::error_code ec;
        if (fs::is_directory(resolved[i], ec)) continue;
        std::string what = fs::exists(resolved[i], ec) ? "is not a directory" : "does not exist";
        out.push_back("include directory '" + given[i] + "' (-I, extra_include_paths) " + what +
                      ": " + resolved[i]);
    }
    return out;
}

std::vector<std::string> brainevent_header_notes(const std::vector<std::string>& resolved) {
    std::vector<std::string> out;
    for (const auto& dir : resolved) {
        std::error_code ec;
        if (!fs::is_regular_file(fs::path(dir) / "brainevent" / "common.h", ec)) continue;
        out.push_back("brainevent/ headers from -I " + dir +
                      ", ahead of bekc's own copies (docs/annotations.md, \"Include order\")");
    }
    return out;
}

}  // namespace bekc
