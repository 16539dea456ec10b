#include "prep/recording.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <nlohmann/json.hpp>

#include "prep/build_args.hpp"
#include "util/json_text.hpp"
#include "util/version.hpp"

namespace bekc {

namespace {

std::string absolute_against(const fs::path& cwd, const std::string& path) {
    return (cwd / path).lexically_normal().string();
}

// Closes the descriptor whatever happens; the flock goes with it.
struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
};

}  // namespace

BuildOptions recorded_options(const BuildOptions& o, const fs::path& cwd) {
    // What chooses the module; everything about this process (where the
    // caches are, where copies and reports go, how many jobs, how much to
    // say) is the replay's own.
    BuildOptions r = o;
    const BuildOptions defaults;
    r.cache_dir = r.read_only_caches = r.remote_cache = std::nullopt;
    r.output_dir = r.depfile = r.compile_commands = r.trace = std::nullopt;
    r.remote_read_only = r.json = r.verbose = r.quiet = r.force = false;
    r.dry_run = r.explain_key = false;
    r.jobs = defaults.jobs;
    // The inputs stay as spelt: the spelling is the wrapper's display path,
    // part of the key, so an absolute one would be another module. The
    // replay runs each load in its recorded directory, where they resolve.
    for (auto& dir : r.flags.include_dirs) dir = absolute_against(cwd, dir);
    if (!r.functions_json.empty()) r.functions_json = absolute_against(cwd, r.functions_json);
    if (r.xla_include) r.xla_include = absolute_against(cwd, *r.xla_include);
    return r;
}

std::string recorded_line(const BuildOptions& o, const fs::path& cwd) {
    nlohmann::ordered_json line = {{"cwd", cwd.lexically_normal().string()},
                                   {"args", to_argv(recorded_options(o, cwd))},
                                   {"bekc", kVersion}};
    return dump_json(line) + "\n";
}

std::expected<void, Error> append_record(const fs::path& path, std::string_view line) {
    auto refuse = [&path](const std::string& why) {
        return fail(ErrorKind::Cache, "cannot record to " + path.string() + ": " + why);
    };
    const std::string not_regular = "it is not a regular file";
    // Non-blocking: a FIFO nobody reads is refused, not waited on.
    int fd = ::open(path.c_str(),
                    O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK,
                    0644);
    if (fd < 0) {
        if (errno == ELOOP)
            return refuse(
                "it is a symbolic link, which bekc does not follow; name the file it "
                "points to");
        if (errno == ENXIO) return refuse(not_regular);  // a FIFO without a reader
        return fail(ErrorKind::Cache, errno_message("open", path, errno));
    }
    FdCloser closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return fail(ErrorKind::Cache, errno_message("stat", path, errno));
    if (!S_ISREG(st.st_mode)) return refuse(not_regular);
    // The flock keeps a long line whole even where one O_APPEND write might
    // not be atomic (a network file system).
    while (::flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) return fail(ErrorKind::Cache, errno_message("lock", path, errno));
    ssize_t n = ::write(fd, line.data(), line.size());
    if (n != static_cast<ssize_t>(line.size()))
        return fail(ErrorKind::Cache, errno_message("write", path, n < 0 ? errno : EIO));
    return {};
}

void record_request(const BuildOptions& o, const BuildContext& ctx, const Reporter& report) {
    auto file = ctx.env("BEKC_RECORD");
    if (!file || o.dry_run) return;
    const fs::path path = fs::path(ctx.cwd) / *file;
    if (auto appended = append_record(path, recorded_line(o, ctx.cwd)); !appended)
        report.warn("record: " + appended.error().message);
}

}  // namespace bekc
