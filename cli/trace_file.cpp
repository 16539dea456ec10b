#include "trace_file.hpp"

#include "driver/fatal.hpp"

namespace bekc::cli {

void TraceFile::start(const std::optional<std::string>& path, std::string name) {
    if (!path) return;
    or_fatal(check_trace_path(*path));
    path_ = *path;
    trace_ = std::make_unique<Trace>(std::move(name));
}

std::expected<void, Error> TraceFile::write(Trace::Args args) {
    std::unique_ptr<Trace> trace = std::move(trace_);  // written once
    trace->span("build", "build", trace->origin(), TraceClock::now(), std::move(args));
    return trace->write(path_);
}

void TraceFile::finish(Trace::Args args) {
    if (trace_) or_fatal(write(std::move(args)));
}

void TraceFile::fail(Error& error, Trace::Args args) {
    if (!trace_) return;
    args["error"] = error.message;
    args["exit_code"] = error.exit_code();
    if (auto written = write(std::move(args)); !written) error.note(written.error().render());
}

int TraceFile::run(const std::optional<std::string>& path, std::string name,
                   const std::function<int(Trace*)>& command) {
    start(path, std::move(name));
    const int code = command(trace());
    finish({{"exit_code", code}});
    return code;
}

Action traced_command(CLI::App& cmd, std::optional<std::string>& path, const std::string& lanes,
                      std::function<int(TraceFile&)> run) {
    cmd.add_option("--trace", path,
                   "Write where the time went to FILE, as a Chrome trace (ui.perfetto.dev, "
                   "chrome://tracing): " +
                       lanes);
    auto trace = std::make_shared<TraceFile>();
    return Action([trace, run = std::move(run)] { return run(*trace); },
                  [trace](Error& error) { trace->fail(error, {}); });
}

}  // namespace bekc::cli
