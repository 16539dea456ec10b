#include "plan/nvcc_phases.hpp"

#include <algorithm>
#include <map>

#include "plan/compile_plan.hpp"
#include "util/text.hpp"

namespace bekc {

std::string_view nvcc_phase_name(NvccPhaseKind kind) {
    switch (kind) {
        case NvccPhaseKind::HostPreprocess:
            return "host-preprocess";
        case NvccPhaseKind::DevicePreprocess:
            return "device-preprocess";
        case NvccPhaseKind::Cudafe:
            return "cudafe++";
        case NvccPhaseKind::Cicc:
            return "cicc";
        case NvccPhaseKind::Ptxas:
            return "ptxas";
        case NvccPhaseKind::Fatbinary:
            return "fatbinary";
        case NvccPhaseKind::HostCompile:
            return "host-compile";
    }
    return "?";
}

fs::path host_compile_depfile(const Step& host_compile) {
    return host_compile.command.outputs.front() + ".host.d";
}

std::string replace_cudafe_arch(std::string text, std::string_view with) {
    static constexpr std::string_view kTail = ".cudafe1.";
    for (size_t at = text.find(kTail); at != std::string::npos; at = text.find(kTail, at + 1)) {
        size_t dot = at == 0 ? std::string::npos : text.rfind('.', at - 1);
        if (dot == std::string::npos || at - dot < 2) continue;
        std::string_view arch = std::string_view(text).substr(dot + 1, at - dot - 1);
        if (!arch.starts_with("compute_") && !arch.starts_with("sm_")) continue;
        text.replace(dot, at - dot, with);
        at = dot + with.size();
    }
    return text;
}

bool is_module_id(std::string_view id) {
    return !id.empty() && id.size() <= kMaxModuleId &&
           std::all_of(id.begin(), id.end(), is_c_identifier_char);
}

std::string fatbin_symbol(size_t unit) {
    return "bekc_fatbin_" + std::to_string(unit);
}

std::vector<std::string> nvcc_dryrun_argv(const Command& compile,
                                          const std::vector<std::string>& nvcc_flags) {
    const auto& a = compile.argv;
    if (a.empty() || fs::path(a[0]).filename() != "nvcc" || flags_ask_device_link(nvcc_flags))
        return {};
    std::vector<std::string> out = {a[0], "--dryrun"};
    for (size_t i = 1; i < a.size(); ++i) {
        if (a[i] == "-MD") continue;
        if ((a[i] == "-MF" || a[i] == "--threads") && i + 1 < a.size()) {
            ++i;
            continue;
        }
        out.push_back(a[i]);
    }
    return out;
}

namespace {

using Vars = std::map<std::string, std::string, std::less<>>;

bool name_char(char c, bool first) {
    return is_c_identifier_char(c) && !(first && c >= '0' && c <= '9');
}

// Whether `rest` (from a '>' on) is redirections alone: `>FILE`, `> FILE`,
// `2>FILE`, `2> FILE`, separated by blanks, FILE a plain word.
bool only_redirections(std::string_view rest) {
    auto blank = [](char c) { return c == ' ' || c == '\t'; };
    size_t i = 0;
    while (i < rest.size()) {
        while (i < rest.size() && blank(rest[i])) ++i;
        if (i == rest.size()) break;
        if (rest.substr(i, 2) == "2>") ++i;
        if (rest[i] != '>') return false;
        ++i;
        while (i < rest.size() && blank(rest[i])) ++i;
        size_t start = i;
        while (i < rest.size() && !blank(rest[i])) {
            if (std::string_view(";|&<>()`'\\$").find(rest[i]) != std::string_view::npos)
                return false;
            ++i;
        }
        if (i == start) return false;
    }
    return true;
}

// One line of the dry run as words, the way nvcc's shell would split it:
// double quotes group, $NAME and ${NAME} expand from nvcc's own variables,
// a word from `>` or `2>` on is a redirection and ends the command. Anything
// else a shell would treat specially (single quotes, backslashes, globs,
// `;`, pipes, a variable nvcc did not set) is refused: bekc would not run
// it as nvcc does.
std::expected<std::vector<std::string>, std::string> split_words(std::string_view line,
                                                                 const Vars& vars) {
    std::vector<std::string> words;
    std::string cur;
    bool in_word = false, quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
        char c = line[i];
        if (c == '"') {
            quoted = !quoted;
            in_word = true;
            continue;
        }
        if (c == '$') {
            bool brace = i + 1 < line.size() && line[i + 1] == '{';
            size_t start = i + 1 + (brace ? 1 : 0), end = start;
            while (end < line.size() && name_char(line[end], end == start)) ++end;
            if (end == start || (brace && (end >= line.size() || line[end] != '}')))
                return std::unexpected("a '$' that is not a variable");
            auto var = vars.find(line.substr(start, end - start));
            if (var == vars.end())
                return std::unexpected("the variable " +
                                       std::string(line.substr(start, end - start)) +
                                       ", which nvcc did not set");
            // Unquoted, a shell would split the value, expand its globs and
            // drop it when empty: only a plain word is taken.
            if (!quoted &&
                (var->second.empty() || var->second.find_first_of(" \t*?[") != std::string::npos))
                return std::unexpected("an unquoted variable that is not one plain word");
            cur += var->second;
            in_word = true;
            i = end - 1 + (brace ? 1 : 0);
            continue;
        }
        if (!quoted && (c == ' ' || c == '\t')) {
            if (in_word) words.push_back(std::move(cur));
            cur.clear();
            in_word = false;
            continue;
        }
        if (!quoted && c == '>') {
            // `> FILE`, `2> FILE`, `>FILE`: nvcc keeps a tool's output; bekc
            // reads it. Nothing but more redirections may follow.
            if (in_word && cur != "2") return std::unexpected("a redirection inside a word");
            if (!only_redirections(line.substr(i)))
                return std::unexpected("a command after a redirection");
            return words;
        }
        if (c == '\\' || c == '\'' || c == '`' ||
            (!quoted && std::string_view(";|&<()*?[]{}~#").find(c) != std::string_view::npos))
            return std::unexpected(std::string("the character '") + c + "'");
        cur += c;
        in_word = true;
    }
    if (quoted) return std::unexpected("an unclosed quote");
    if (in_word) words.push_back(std::move(cur));
    return words;
}

// The value after `-o` (or another option's), or empty.
std::string value_of(const std::vector<std::string>& argv, std::string_view option) {
    for (size_t i = 0; i + 1 < argv.size(); ++i)
        if (argv[i] == option) return argv[i + 1];
    return {};
}

bool has(const std::vector<std::string>& argv, std::string_view word) {
    return std::find(argv.begin(), argv.end(), word) != argv.end();
}

// The phase a command is, with the files it names; an error for a command
// a whole-program compile does not run.
std::expected<NvccPhase, std::string> classify(std::vector<std::string> argv) {
    NvccPhase p;
    std::string tool = fs::path(argv[0]).filename().string();
    // The file a tool reads: the last argument before -o with the suffix of
    // what it reads (nvcc 13.5 puts --simt-only between cicc's input and -o).
    auto input_before_o = [&](std::string_view suffix) -> std::string {
        auto o = std::find(argv.begin(), argv.end(), std::string("-o"));
        for (auto it = o; it != argv.begin();)
            if ((--it)->ends_with(suffix) && !it->starts_with("-")) return *it;
        return {};
    };
    if (tool == "cudafe++") {
        p.kind = NvccPhaseKind::Cudafe;
        p.inputs = {argv.back()};
        p.outputs = {value_of(argv, "--gen_c_file_name")};
        if (has(argv, "--gen_module_id_file"))
            p.outputs.push_back(value_of(argv, "--module_id_file_name"));
    } else if (tool == "cicc") {
        p.kind = NvccPhaseKind::Cicc;
        p.arch = value_of(argv, "-arch");
        p.inputs = {input_before_o(".ii")};
        if (has(argv, "--gen_module_id_file")) return std::unexpected("cicc writes the module id");
        p.inputs.push_back(value_of(argv, "--module_id_file_name"));
        for (auto opt : {"-o", "--gen_c_file_name", "--stub_file_name", "--gen_device_file_name"})
            p.outputs.push_back(value_of(argv, opt));
    } else if (tool == "ptxas") {
        p.kind = NvccPhaseKind::Ptxas;
        for (const auto& a : argv)
            if (a.starts_with("-arch=")) p.arch = a.substr(6);
        p.inputs = {input_before_o(".ptx")};
        p.outputs = {value_of(argv, "-o")};
    } else if (tool == "fatbinary") {
        p.kind = NvccPhaseKind::Fatbinary;
        for (const auto& a : argv) {
            if (a.starts_with("--create=")) p.outputs.push_back(a.substr(9));
            if (a.starts_with("--image3=") && a.find(",file=") != std::string::npos)
                p.inputs.push_back(a.substr(a.find(",file=") + 6));
        }
        if (p.outputs.size() != 1 || p.inputs.empty())
            return std::unexpected("a fatbinary command without one --create and an image");
    } else if (has(argv, "-E") && !has(argv, "-c")) {
        p.kind = NvccPhaseKind::HostPreprocess;
        for (const auto& a : argv)
            if (a.starts_with("-D__CUDA_ARCH__=")) {
                p.kind = NvccPhaseKind::DevicePreprocess;
                p.arch = "compute_" + a.substr(16, a.size() - 16 - 1);
            }
        p.outputs = {value_of(argv, "-o")};
    } else if (has(argv, "-c") && !has(argv, "-E")) {
        p.kind = NvccPhaseKind::HostCompile;
        p.inputs = {input_before_o(".cpp")};
        p.outputs = {value_of(argv, "-o")};
    } else {
        return std::unexpected("the command " + tool);
    }
    // Relocatable device code, asked for by whatever nvcc read (its
    // environment, nvcc.profile): the registration nvcc's own fatbin.c does
    // for it is not the one bekc writes.
    if (has(argv, "--device-c")) return std::unexpected(tool + " --device-c");
    for (const auto& f : p.inputs)
        if (f.empty()) return std::unexpected(tool + " without the file it reads");
    for (const auto& f : p.outputs)
        if (f.empty()) return std::unexpected(tool + " without the file it writes");
    p.argv = std::move(argv);
    return p;
}

}  // namespace

std::expected<NvccPipeline, std::string> parse_nvcc_dryrun(std::string_view text) {
    NvccPipeline out;
    Vars vars;
    size_t number = 0;
    while (!text.empty()) {
        size_t eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
        ++number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.empty()) continue;
        auto fail = [&](const std::string& why) {
            return std::unexpected("line " + std::to_string(number) + ": " + why);
        };
        if (!line.starts_with("#$ ")) return fail("not a command");
        line.remove_prefix(3);
        // `-- Filter Dependencies --`: nvcc's own -MD pass, not asked for.
        if (line.starts_with("rm ") || line.starts_with("-- ")) continue;
        size_t name_end = 0;
        while (name_end < line.size() && name_char(line[name_end], name_end == 0)) ++name_end;
        if (name_end > 0 && name_end < line.size() && line[name_end] == '=') {
            auto words = split_words(line.substr(name_end + 1), vars);
            if (!words) return fail(words.error());
            std::string value;
            for (const auto& w : *words) value += (value.empty() ? "" : " ") + w;
            std::string name(line.substr(0, name_end));
            vars[name] = value;
            if (!(name.starts_with("_") && name.ends_with("_"))) {
                std::erase_if(out.env, [&](const auto& kv) { return kv.first == name; });
                out.env.emplace_back(name, value);
            }
            continue;
        }
        auto words = split_words(line, vars);
        if (!words) return fail(words.error());
        if (words->empty()) return fail("an empty command");
        auto phase = classify(std::move(*words));
        if (!phase) return fail(phase.error());
        out.phases.push_back(std::move(*phase));
    }
    return out;
}

namespace {

// What split_nvcc_compile checks before it changes the graph: the phases
// one whole-program compile runs, each once (per architecture).
std::expected<void, std::string> check_pipeline(const NvccPipeline& p) {
    std::map<NvccPhaseKind, int> count;
    for (const auto& ph : p.phases) ++count[ph.kind];
    for (auto k : {NvccPhaseKind::HostPreprocess, NvccPhaseKind::Cudafe, NvccPhaseKind::Fatbinary,
                   NvccPhaseKind::HostCompile})
        if (count[k] != 1)
            return std::unexpected(std::string(nvcc_phase_name(k)) + " " +
                                   std::to_string(count[k]) + " times");
    if (count[NvccPhaseKind::Cicc] == 0 ||
        count[NvccPhaseKind::Cicc] != count[NvccPhaseKind::DevicePreprocess])
        return std::unexpected("not one cicc per device preprocessing");
    return {};
}

// The assembler text that puts a fat binary in the section nvcc's own
// fatbin.c puts it in, under a hidden symbol.
std::string fatbin_assembly(const std::string& symbol, const std::string& fatbin) {
    // The note keeps the library's stack non-executable (an object without
    // it asks the linker for an executable one).
    return ".section .nv_fatbin, \"a\"\n.balign 8\n.globl " + symbol + "\n.hidden " + symbol +
           "\n" + symbol + ":\n.incbin \"" + fatbin + "\"\n" +
           ".section .note.GNU-stack, \"\", @progbits\n";
}

// The fatbin.c the host compile includes: the wrapper the CUDA runtime
// registers, pointing at the symbol of the fat binary's own object.
std::string fatbin_c(const std::string& symbol) {
    return "#ifndef __SKIP_INTERNAL_FATBINARY_HEADERS\n"
           "#include \"fatbinary_section.h\"\n"
           "#endif\n"
           "#define __CUDAFATBINSECTION \".nvFatBinSegment\"\n"
           "#define __CUDAFATBINDATASECTION \".nv_fatbin\"\n"
           "#ifdef __cplusplus\n"
           "extern \"C\" {\n"
           "#endif\n"
           "extern const unsigned long long " +
           symbol +
           "[] __attribute__((visibility(\"hidden\")));\n"
           "static const __fatBinC_Wrapper_t __fatDeviceText __attribute__((aligned(8)))\n"
           "    __attribute__((section(__CUDAFATBINSECTION))) = {0x466243b1, 1, " +
           symbol +
           ", 0};\n"
           "#ifdef __cplusplus\n"
           "}\n"
           "#endif\n";
}

// A path the assembler's .incbin "..." and the generated text take as it is.
bool plain_path(const std::string& path) {
    return !path.empty() && path.find_first_of("\"\\\n\r") == std::string::npos;
}

struct NewSteps {
    std::vector<Step> steps;  // `after` holds indices into `steps`, or kOld + an old index
    size_t object = 0;        // the host compile
    size_t fatbin_object = 0;
    fs::path fatbin_object_path;
};

constexpr size_t kOld = size_t(1) << 40;

// Builds the steps that replace one compile, in nvcc's order, each after
// the steps that write the files it reads.
class PhaseSteps {
  public:
    PhaseSteps(const Step& compile, const NvccPipeline& p, const SplitRequest& r)
        : compile_(compile), p_(p), r_(r) {
        const std::string& d = compile.command.description;
        unit_name_ = d.substr(std::min(d.size(), d.find(' ') + 1));
    }

    std::expected<NewSteps, std::string> make() {
        for (const auto& ph : p_.phases)
            if (auto added = phase(ph); !added) return std::unexpected(added.error());
        if (!plain_path(fatbin_))
            return std::unexpected("a fat binary path the assembler cannot take");
        fatbin_object();
        return std::move(out_);
    }

  private:
    size_t add(Step s) {
        for (const auto& in : s.command.inputs)
            if (auto w = writer_.find(in); w != writer_.end()) s.after.push_back(w->second);
        for (const auto& o : s.command.outputs) writer_[o] = out_.steps.size();
        out_.steps.push_back(std::move(s));
        return out_.steps.size() - 1;
    }

    // A step after what the compile came after (its wrapper, the headers).
    Step base(std::string description, StepKind kind = StepKind::NvccPhase) const {
        Step s;
        s.kind = kind;
        s.unit = compile_.unit;
        for (size_t a : compile_.after) s.after.push_back(kOld + a);
        s.command.description = std::move(description);
        s.command.env_overrides = p_.env;
        s.command.cwd = compile_.command.cwd;
        return s;
    }

    std::expected<void, std::string> phase(const NvccPhase& ph) {
        Step s = base(std::string(nvcc_phase_name(ph.kind)) + (ph.arch.empty() ? "" : " ") +
                      ph.arch + " " + unit_name_);
        s.command.argv = ph.argv;
        s.command.inputs = ph.inputs;
        s.command.outputs = ph.outputs;
        s.phase = std::string(nvcc_phase_name(ph.kind));
        switch (ph.kind) {
            case NvccPhaseKind::HostPreprocess:
            case NvccPhaseKind::DevicePreprocess:
                s.depfile = compile_.depfile.string() + "." + std::to_string(depfiles_++);
                s.command.argv.insert(s.command.argv.end(), {"-MD", "-MF", s.depfile.string()});
                s.command.outputs.push_back(s.depfile.string());
                break;
            case NvccPhaseKind::Cudafe:
                cudafe_output_names(s);
                if (auto ok = own_module_id(s); !ok) return ok;
                [[fallthrough]];
            case NvccPhaseKind::Cicc:
                if (ph.kind == NvccPhaseKind::Cicc)
                    fatbin_c_name_ = value_of(ph.argv, "--include_file_name");
                if (auto ok = set_orig_src_path(s); !ok) return ok;
                break;
            case NvccPhaseKind::Fatbinary:
                fatbin_ = ph.outputs.front();
                std::erase_if(s.command.argv, [](const std::string& a) {
                    return a.starts_with("--embedded-fatbin=");
                });
                break;
            case NvccPhaseKind::HostCompile:
                return host_compile(std::move(s));
            case NvccPhaseKind::Ptxas:
                break;
        }
        add(std::move(s));
        return {};
    }

    // nvcc names cudafe++'s output and the stub it includes after the last
    // architecture (x.compute_90.cudafe1.cpp); bekc names them after the
    // object alone (x.cudafe1.cpp), so that cudafe++'s command, and what it
    // writes, do not change with the architectures. The stub is copied to
    // that name from the last cicc, which writes it under nvcc's.
    void cudafe_output_names(Step& s) {
        auto& a = s.command.argv;
        for (size_t i = 0; i + 1 < a.size(); ++i) {
            if (a[i] == "--gen_c_file_name") {
                nvcc_cudafe_c_ = a[i + 1];
                a[i + 1] = cudafe_c_ = replace_cudafe_arch(a[i + 1], "");
            } else if (a[i] == "--stub_file_name") {
                nvcc_stub_ = a[i + 1];
                a[i + 1] = stub_ = replace_cudafe_arch(a[i + 1], "");
            }
        }
        std::replace(s.command.outputs.begin(), s.command.outputs.end(), nvcc_cudafe_c_, cudafe_c_);
    }

    // With a module id of bekc's (SplitRequest::module_id), cudafe++ reads
    // it from the file nvcc names instead of writing one there, and a step
    // writes that file before cudafe++ and every cicc, which reads it too:
    // cicc then starts beside cudafe++, and both compile with the same id.
    std::expected<void, std::string> own_module_id(Step& s) {
        if (r_.module_id.empty()) return {};
        if (!is_module_id(r_.module_id))
            return std::unexpected("a module id that is not an identifier: " + r_.module_id);
        auto& a = s.command.argv;
        const std::string file = value_of(a, "--module_id_file_name");
        if (file.empty() || std::erase(a, std::string("--gen_module_id_file")) != 1)
            return std::unexpected("cudafe++ without --gen_module_id_file --module_id_file_name");
        std::erase(s.command.outputs, file);
        s.command.inputs.push_back(file);
        Step w = base("write " + fs::path(file).filename().string(), StepKind::WriteWrapper);
        w.command.outputs = {file};
        w.content = r_.module_id;
        add(std::move(w));
        return {};
    }

    std::expected<void, std::string> set_orig_src_path(Step& s) const {
        auto& a = s.command.argv;
        auto at = std::find(a.begin(), a.end(), std::string("--orig_src_path_name"));
        if (at == a.end() || at + 1 == a.end())
            return std::unexpected("cudafe++ or cicc without --orig_src_path_name");
        if (!r_.orig_src_path.empty()) *(at + 1) = r_.orig_src_path;
        return {};
    }

    // The host compile of cudafe++'s output, which includes the stub cicc
    // writes and the fatbin.c bekc writes, both beside it.
    std::expected<void, std::string> host_compile(Step s) {
        fs::path dir = fs::path(cudafe_c_).parent_path();
        if (stub_.empty() || fatbin_c_name_.empty() || s.command.inputs.front() != nvcc_cudafe_c_)
            return std::unexpected("a host compile of another file than cudafe++'s");
        // Written beside cudafe++'s output: plain file names only.
        for (const std::string* name : {&stub_, &nvcc_stub_, &fatbin_c_name_})
            if (name->find('/') != std::string::npos || *name == "." || *name == "..")
                return std::unexpected("a stub or fatbin.c name with a directory: " + *name);
        std::replace(s.command.argv.begin(), s.command.argv.end(), nvcc_cudafe_c_, cudafe_c_);
        s.command.inputs.front() = cudafe_c_;
        std::string nvcc_stub = (dir / nvcc_stub_).string();
        if (!writer_.contains(nvcc_stub))
            return std::unexpected("no cicc writes the stub the host compile includes");
        if (nvcc_stub_ != stub_) {  // one architecture: nvcc's names carry none
            Step copy = base("copy " + nvcc_stub_, StepKind::WriteWrapper);
            copy.copy_from = nvcc_stub;
            copy.command.inputs = {nvcc_stub};
            copy.command.outputs = {(dir / stub_).string()};
            add(std::move(copy));
        }
        Step w = base("write " + fatbin_c_name_, StepKind::WriteWrapper);
        w.command.outputs = {(dir / fatbin_c_name_).string()};
        w.content = fatbin_c(fatbin_symbol(*compile_.unit));
        add(std::move(w));
        s.command.inputs.push_back((dir / stub_).string());
        s.command.inputs.push_back((dir / fatbin_c_name_).string());
        s.kind = StepKind::Compile;
        s.command.description = compile_.command.description;
        s.command.argv.insert(s.command.argv.end(),
                              {"-MD", "-MF", host_compile_depfile(s).string()});
        out_.object = add(std::move(s));
        return {};
    }

    // The fat binary embedded by the assembler in an object of its own.
    void fatbin_object() {
        fs::path assembly = fatbin_ + ".s";
        out_.fatbin_object_path = fatbin_ + ".o";
        Step w = base("write " + assembly.filename().string(), StepKind::WriteWrapper);
        w.command.outputs = {assembly.string()};
        w.content = fatbin_assembly(fatbin_symbol(*compile_.unit), fatbin_);
        add(std::move(w));
        Step as = base("assemble " + fs::path(fatbin_).filename().string());
        as.command.argv = {r_.cxx.string(), "-c", assembly.string(), "-o",
                           out_.fatbin_object_path.string()};
        as.command.inputs = {assembly.string(), fatbin_};
        as.command.outputs = {out_.fatbin_object_path.string()};
        out_.fatbin_object = add(std::move(as));
    }

    const Step& compile_;
    const NvccPipeline& p_;
    const SplitRequest& r_;
    std::string unit_name_, stub_, fatbin_c_name_, fatbin_, cudafe_c_;
    std::string nvcc_stub_, nvcc_cudafe_c_;  // nvcc's names of the two
    std::map<std::string, size_t> writer_;   // file -> the new step that writes it
    size_t depfiles_ = 0;
    NewSteps out_;
};

}  // namespace

std::expected<void, std::string> split_nvcc_compile(BuildGraph& graph, const NvccPipeline& pipeline,
                                                    const SplitRequest& r) {
    if (r.step >= graph.steps.size() || graph.steps[r.step].kind != StepKind::Compile ||
        !graph.steps[r.step].unit)
        return std::unexpected("not the compile of an input");
    if (auto ok = check_pipeline(pipeline); !ok) return ok;
    // Every file a phase writes goes beside the object (-objtemp), where the
    // build directory's removal takes it; never nvcc's /tmp/tmpxft_* names.
    const fs::path dir = fs::path(graph.steps[r.step].command.outputs.front()).parent_path();
    for (const auto& ph : pipeline.phases)
        for (const auto& out : ph.outputs)
            if (fs::path(out).lexically_normal().parent_path() != dir.lexically_normal())
                return std::unexpected(out + " is outside the build directory");
    auto made = PhaseSteps(graph.steps[r.step], pipeline, r).make();
    if (!made) return std::unexpected(made.error());
    // The new steps take the compile's place; later indices move up.
    const size_t n = made->steps.size();
    auto moved = [&](size_t old) -> size_t {
        if (old < r.step) return old;
        if (old == r.step) return r.step + made->object;
        return old + n - 1;
    };
    std::vector<Step> steps(graph.steps.begin(), graph.steps.begin() + r.step);
    steps.reserve(graph.steps.size() + n - 1);
    for (auto& s : made->steps) {
        for (auto& a : s.after) a = a >= kOld ? moved(a - kOld) : r.step + a;
        steps.push_back(std::move(s));
    }
    std::string object = graph.steps[r.step].command.outputs.front();
    for (size_t i = r.step + 1; i < graph.steps.size(); ++i) {
        Step s = graph.steps[i];
        bool links = false;
        for (auto& a : s.after) {
            links = links || a == r.step;
            a = moved(a);
        }
        if (links && s.kind == StepKind::Link) {
            // The fat binary's object is linked right after the host object.
            s.after.push_back(r.step + made->fatbin_object);
            std::string fo = made->fatbin_object_path.string();
            auto at = std::find(s.command.argv.begin(), s.command.argv.end(), object);
            if (at == s.command.argv.end()) return std::unexpected("a link without the object");
            s.command.argv.insert(at + 1, fo);
            auto in = std::find(s.command.inputs.begin(), s.command.inputs.end(), object);
            s.command.inputs.insert(in == s.command.inputs.end() ? in : in + 1, fo);
        }
        steps.push_back(std::move(s));
    }
    graph.steps = std::move(steps);
    return {};
}

}  // namespace bekc
