#include "package/child_builds.hpp"

#include <cstdio>

#include "driver/fatal.hpp"
#include "run/interrupt.hpp"
#include "run/parallel.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"

namespace bekc {

fs::path own_executable() {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec)
        fatal(Error::make(ErrorKind::Internal, "cannot find its own executable: " + ec.message()));
    return self;
}

std::optional<std::string> ChildSlots::makeflags() const {
    if (!served) return std::nullopt;
    return served->makeflags();
}

ChildSlots child_slots(int jobs, bool verbose, bool dry_run, const fs::path& cache_root,
                       const BuildContext& ctx) {
    ChildSlots out{JobSlots::take(jobs, ctx.env), std::nullopt};
    if (verbose && !out.from_make.refusal().empty())
        std::fprintf(stderr, "bekc: note: %s\n", out.from_make.refusal().c_str());
    if (!out.from_make.named_by_make() && !dry_run) {
        out.served.emplace(or_fatal(JobSlots::serve(jobs, private_dir_places(cache_root, ctx))));
    }
    return out;
}

std::vector<ProcessResult> run_children(Runner& runner, const std::vector<Command>& commands,
                                        const std::vector<size_t>& order, ChildSlots& slots,
                                        bool quiet) {
    size_t done = 0;
    ParallelOptions po;
    po.keep_going = true;
    po.tokens = slots.slots().jobserver();
    auto started = runner.run(
        commands, slots.slots().count(),
        [&](const ProgressEvent& e) {
            // A child stopped by Ctrl-C did not fail to build.
            if (e.kind != ProgressEvent::Kind::Finished || quiet || interrupted_by()) return;
            ++done;
            std::fprintf(stderr, "[%zu/%zu] %s: %s\n", done, commands.size(),
                         e.command.description.c_str(),
                         e.result->ok() ? "done" : e.result->describe().c_str());
        },
        po);
    throw_if_interrupted();
    std::vector<ProcessResult> results(order.size());  // in the caller's order
    for (size_t k = 0; k < order.size(); ++k) results[order[k]] = std::move(started[k]);
    return results;
}

std::string child_messages(const ProcessResult& r) {
    std::string out = r.output;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    size_t last = out.rfind('\n') + 1;  // 0 when there is one line
    if (parse_json(out.substr(last)).value_or(nullptr).is_object()) out.erase(last);
    if (!out.empty() && out.back() != '\n') out += '\n';
    return out;
}

nlohmann::json child_json(const ProcessResult& r) {
    std::string out = r.output;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    nlohmann::json j = parse_json(out.substr(out.rfind('\n') + 1)).value_or(nullptr);
    return j.is_object() ? j : nlohmann::json();
}

}  // namespace bekc
