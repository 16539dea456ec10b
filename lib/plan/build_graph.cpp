#include "plan/build_graph.hpp"

namespace bekc {

std::string_view step_kind_name(StepKind kind) {
    switch (kind) {
        case StepKind::WriteWrapper:
            return "write-wrapper";
        case StepKind::RuntimeHeaders:
            return "runtime-headers";
        case StepKind::RuntimeObject:
            return "runtime-object";
        case StepKind::Compile:
            return "compile";
        case StepKind::NvccPhase:
            return "nvcc-phase";
        case StepKind::Link:
            return "link";
    }
    return "?";
}

Command runtime_object_command(const Tool& cxx, const std::string& cxx_std,
                               const fs::path& runtime_include, const fs::path& object,
                               const std::optional<fs::path>& launcher) {
    Command c;
    fs::path source = runtime_include / "bekc" / "handler_rt.cpp";
    c.argv = {cxx.path.string(),
              "-std=" + cxx_std,
              "-O2",
              "-fPIC",
              "-fvisibility=hidden",
              "-I" + runtime_include.string(),
              "-c",
              source.string(),
              "-o",
              object.string()};
    if (launcher) c.argv.insert(c.argv.begin(), launcher->string());
    c.description = "c++ bekc/handler_rt.cpp";
    c.inputs = {source.string()};
    c.outputs = {object.string()};
    return c;
}

BuildGraph make_build_graph(const GraphRequest& r) {
    BuildGraph g;
    g.library = r.plan.library;
    BuildPlan plan = make_build_plan(r.plan);
    g.link_depfile = plan.link_depfile;
    auto add = [&](Step s) {
        g.steps.push_back(std::move(s));
        return g.steps.size() - 1;
    };
    auto write = [&](const fs::path& path, std::string text) {
        Step s;
        s.kind = StepKind::WriteWrapper;
        s.command.description = "write " + path.filename().string();
        s.command.outputs = {path.string()};
        s.content = std::move(text);
        return add(std::move(s));
    };
    std::vector<size_t> wrappers;
    for (size_t i = 0; i < r.plan.units.size(); ++i)
        wrappers.push_back(write(r.plan.units[i].wrapper,
                                 i < r.wrapper_texts.size() ? r.wrapper_texts[i] : std::string()));
    size_t handlers_text = write(r.plan.handlers, r.handlers_text);
    std::optional<size_t> headers, object;
    if (r.write_runtime_headers) {
        Step s;
        s.kind = StepKind::RuntimeHeaders;
        s.command.description = "write bekc's runtime headers";
        s.command.outputs = {r.plan.runtime_include.string()};
        headers = add(std::move(s));
    }
    if (r.compile_runtime_object) {
        Step s;
        s.kind = StepKind::RuntimeObject;
        s.command = runtime_object_command(r.plan.cxx, r.plan.flags.cxx_std, r.plan.runtime_include,
                                           *r.compile_runtime_object, r.plan.launcher);
        if (headers) s.after.push_back(*headers);
        object = add(std::move(s));
    }
    auto compile = [&](CompileStep c, size_t written, std::optional<size_t> unit) {
        Step s;
        s.kind = StepKind::Compile;
        s.command = std::move(c.command);
        s.depfile = std::move(c.depfile);
        s.unit = unit;
        s.after.push_back(written);
        if (headers) s.after.push_back(*headers);
        return add(std::move(s));
    };
    Step link;
    link.kind = StepKind::Link;
    link.command = std::move(plan.link);
    for (size_t i = 0; i < plan.compiles.size(); ++i)
        link.after.push_back(compile(std::move(plan.compiles[i]), wrappers.at(i), i));
    link.after.push_back(compile(std::move(plan.handlers), handlers_text, std::nullopt));
    if (object) link.after.push_back(*object);
    add(std::move(link));
    return g;
}

std::string describe_step(const Step& step) {
    if (step.runs()) return display_command(step.command);
    if (!step.copy_from.empty()) {
        std::string out = "# copy: ";
        out += shell_quote(step.copy_from.string());
        out += ' ';
        out += shell_quote(step.command.outputs.front());
        return out;
    }
    // Appended, not `"# " + std::string(...)`: GCC 12 warns falsely
    // (-Wstringop-overflow) about the operator+ that inserts at the front.
    std::string out = "# ";
    out += step_kind_name(step.kind);
    out += ':';
    for (const auto& o : step.command.outputs) {
        out += ' ';
        out += shell_quote(o);
    }
    return out;
}

}  // namespace bekc
