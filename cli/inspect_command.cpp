#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "commands.hpp"
#include "driver/fatal.hpp"
#include "prep/inputs.hpp"
#include "toolchain/device_code.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"

namespace bekc::cli {

namespace {

struct InspectOptions {
    std::vector<std::string> inputs;
    std::vector<std::string> functions;
    std::string functions_json;
    std::string device_code;  // --device-code LIB: a built library instead of sources
    bool json = false;
};

std::string join(const std::vector<std::string>& v, const char* sep) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
    return out;
}

nlohmann::ordered_json arch_names(const std::vector<Arch>& archs, bool ptx) {
    nlohmann::ordered_json names = nlohmann::ordered_json::array();
    for (const auto& a : archs) names.push_back(ptx ? a.compute() : a.sm());
    return names;
}

// `--device-code LIB`: the SASS and PTX architectures the library's fat
// binaries hold, as JSON. The library is the user's input, so a file that
// cannot be read is a usage error, as a missing source is.
int print_device_code(const std::string& library) {
    auto read = read_device_code(library);
    if (!read) {
        read.error().kind = ErrorKind::Usage;
        fatal(std::move(read.error()));
    }
    const DeviceCode& code = *read;
    nlohmann::ordered_json out{{"sass", arch_names(code.sass, false)},
                               {"ptx", arch_names(code.ptx, true)}};
    std::puts(dump_json(out).c_str());
    return kExitOk;
}

int inspect(const InspectOptions& o) {
    if (!o.device_code.empty() && !o.inputs.empty())
        fatal(Error::make(ErrorKind::Usage, "bekc inspect --device-code takes no kernel source")
                  .note("inspect the sources and the library in two commands"));
    if (!o.device_code.empty()) return print_device_code(o.device_code);
    if (o.inputs.empty())
        fatal(Error::make(ErrorKind::Usage,
                          "bekc inspect needs at least one input, or --device-code LIB")
                  .note("example: bekc inspect kernels.cu"));
    std::vector<ExplicitSpec> specs =
        or_fatal(collect_explicit_specs(o.functions, o.functions_json));
    ScannedInputs scanned =
        or_fatal(scan_inputs(or_fatal(expand_inputs(o.inputs)), specs, InputsAre::Independent));
    if (has_errors(scanned.diagnostics)) {
        std::fputs(render_all(scanned.diagnostics).c_str(), stderr);
        fatal(Error::make(ErrorKind::Source, ""));  // printed already
    }
    if (o.json) {
        nlohmann::ordered_json files = nlohmann::ordered_json::array();
        for (const auto& f : scanned.files) {
            nlohmann::ordered_json fns = nlohmann::ordered_json::array();
            for (const auto& fn : f.functions)
                fns.push_back({{"name", fn.name},
                               {"arg_spec", fn.canonical_tokens()},
                               {"line", fn.annotation.line}});
            files.push_back({{"path", f.path.string()}, {"functions", fns}});
        }
        std::puts(dump_json(nlohmann::ordered_json{{"files", files}}, 2).c_str());
        return kExitOk;
    }
    for (const auto& f : scanned.files)
        for (const auto& fn : f.functions)
            std::printf("%s(%s)  %s:%d\n", fn.name.c_str(),
                        join(fn.canonical_tokens(), ", ").c_str(), f.path.c_str(),
                        fn.annotation.line);
    return kExitOk;
}

}  // namespace

Action add_inspect_command(CLI::App& app) {
    auto o = std::make_shared<InspectOptions>();
    CLI::App* cmd = app.add_subcommand("inspect",
                                       "List the exported functions and their "
                                       "arg_specs, without compiling");
    cmd->add_option("inputs", o->inputs, "Kernel sources (.cu, .cpp, .cc, .cxx) or directories");
    cmd->add_option("--function", o->functions,
                    "Export NAME with this spec instead of the annotations: 'NAME=arg,ret,...' "
                    "(tokens may be omitted to infer them: 'NAME')");
    cmd->add_option("--functions", o->functions_json,
                    "JSON file {\"NAME\": [\"arg\", \"ret\", ...]} naming the exports");
    cmd->add_flag("--json", o->json, "Print {\"files\": [{\"path\", \"functions\": [...]}]}");
    cmd->add_option("--device-code", o->device_code,
                    "Instead of sources, print the GPU code of a built library LIB as "
                    "{\"sass\": [\"sm_80\", ...], \"ptx\": [\"compute_90\", ...]}");
    return [o] { return inspect(*o); };
}

}  // namespace bekc::cli
