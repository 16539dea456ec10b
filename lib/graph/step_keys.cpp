#include "graph/step_keys.hpp"

#include <nlohmann/json.hpp>

#include "plan/compile_plan.hpp"
#include "plan/nvcc_phases.hpp"
#include "store/hash.hpp"
#include "store/key.hpp"
#include "toolchain/flag_files.hpp"
#include "toolchain/tools.hpp"
#include "util/json_text.hpp"
#include "util/text.hpp"

namespace bekc {

namespace {

bool kept_phase(const Step& s) {
    return s.phase == "cudafe++" || s.phase == "cicc" || s.phase == "ptxas" ||
           s.phase == "host-compile";
}

// Every build directory of this user's (util/fs private_temp_dir:
// <private>/build.<32 hex>.<6 characters>) becomes "$BUILD": this build's,
// and an earlier one's that a reused output names (a stub's line markers).
void hide_build_dirs(std::string& text, const fs::path& build_dir) {
    const std::string start = build_dir.parent_path().string() + "/build.";
    const size_t name = 32 + 1 + 6;
    for (size_t at = text.find(start); at != std::string::npos; at = text.find(start, at + 1)) {
        size_t end = at + start.size() + name;
        if (end > text.size() || text[at + start.size() + 32] != '.') continue;
        text.replace(at, end - at, "$BUILD");
    }
}

// The last architecture in nvcc's names for cudafe++'s output, in the
// #include and line-marker lines of a file (the copied stub names itself
// after the cicc that wrote it), never in its code: "x.$LAST.cudafe1.stub.c"
// (plan/nvcc_phases.hpp, replace_cudafe_arch).
void hide_last_arch_in_directives(std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        size_t eol = std::min(text.find('\n', pos), text.size());
        std::string line = text.substr(pos, eol - pos);
        if (line.starts_with("#")) line = replace_cudafe_arch(std::move(line), ".$LAST");
        out += line;
        if (eol < text.size()) out += '\n';
        pos = eol + 1;
    }
    text = std::move(out);
}

bool is_arch_macro(std::string_view arg) {
    return arg.starts_with("-D__CUDA_ARCH__=") || arg.starts_with("-D__CUDA_ARCH_LIST__=");
}

bool has_debug_info(const std::vector<std::string>& argv) {
    for (const auto& a : argv)
        if (a.starts_with("-g") && !a.starts_with("-gno")) return true;
    return false;
}

// Whether `text` names __CUDA_ARCH__ or __CUDA_ARCH_LIST__ as a whole
// identifier (not __CUDA_ARCH_FEAT_..., which is another macro).
bool names_arch_macro(std::string_view text) {
    for (std::string_view name : {"__CUDA_ARCH__", "__CUDA_ARCH_LIST__"})
        for (size_t at = text.find(name); at != std::string_view::npos;
             at = text.find(name, at + 1)) {
            bool start = at == 0 || !is_c_identifier_char(text[at - 1]);
            bool end =
                at + name.size() >= text.size() || !is_c_identifier_char(text[at + name.size()]);
            if (start && end) return true;
        }
    return false;
}

}  // namespace

const std::optional<StepReuse::Keyed>& StepReuse::key(const Step& s) {
    auto it = keys_.find(&s);
    if (it == keys_.end()) it = keys_.emplace(&s, compute_key(s)).first;
    return it->second;
}

std::optional<StepReuse::Keyed> StepReuse::compute_key(const Step& s) const {
    if (!kept_phase(s) || !in_.nvcc || s.command.argv.empty()) return std::nullopt;
    const bool host = s.phase == "host-compile";
    const bool hide_arch = host && !has_debug_info(s.command.argv);
    auto normal = [&](std::string text) {  // an argument or a file name
        hide_build_dirs(text, build_dir_);
        return text;
    };
    auto normal_file = [&](std::string text) {  // a file's bytes
        hide_build_dirs(text, build_dir_);
        if (hide_arch) hide_last_arch_in_directives(text);
        return text;
    };
    auto program = identify_tool(s.command.argv.front());
    if (!program) return std::nullopt;
    KeyBuilder k("step");
    k.add("phase", s.phase).add("program", program->identity());
    k.add("nvcc", in_.nvcc->identity()).add("nvcc_version", in_.nvcc_version);
    if (!in_.nvcc_wheels.empty()) k.add_list("nvcc.wheels", in_.nvcc_wheels);
    if (host) k.add("cxx_version", in_.cxx_version);
    // cudafe++ and cicc read the module id from the file bekc writes (or
    // cicc from cudafe++'s, when bekc gives none: plan/nvcc_phases.hpp,
    // SplitRequest::module_id): its bytes count, not its name.
    std::string module_id_file;
    std::vector<std::string> argv;
    bool names_macros = false;
    for (size_t i = 1; i < s.command.argv.size(); ++i) {
        const std::string& a = s.command.argv[i];
        names_macros = names_macros || (host && !is_arch_macro(a) && names_arch_macro(a));
        if (a == "--module_id_file_name" && i + 1 < s.command.argv.size()) {
            module_id_file = s.command.argv[++i];
            argv.insert(argv.end(), {a, "$MODULE_ID"});
        } else if (host && is_arch_macro(a)) {
            continue;  // kept beside the object (host_compile_fits)
        } else if (host && a == "-MF" && i + 1 < s.command.argv.size()) {
            ++i;  // where the dependencies go, not what is compiled
        } else if (s.phase == "ptxas" && a == "-o" && i + 1 < s.command.argv.size()) {
            // nvcc names the last architecture's cubin apart (x.compute_90.sm_90.cubin);
            // the name does not reach the cubin.
            argv.push_back("-o");
            ++i;
        } else {
            argv.push_back(normal(a));
        }
    }
    k.add_list("argv", argv);
    // What the tools read from bekc's environment (toolchain/compiler_env),
    // as the direct key holds it; then what nvcc sets for them.
    for (const auto& [name, value] : in_.env.values) k.add("compiler_env." + name, value);
    for (const auto& [name, value] : s.command.env_overrides)
        if (name != "PATH" || host) k.add("env." + name, normal(value));
    for (const auto& input : s.command.inputs) {
        auto text = read_file(input);
        if (!text) return std::nullopt;
        names_macros = names_macros || (host && names_arch_macro(*text));
        k.add("input", input == module_id_file ? "$MODULE_ID" : normal(input))
            .add("input.sha256", sha256_hex(normal_file(std::move(*text))));
    }
    // The files its flags make it read: the argument names them, the bytes count.
    auto flag_files = read_command_flag_files(
        s.command.argv, s.command.cwd.empty() ? cwd_ : fs::path(s.command.cwd));
    if (!flag_files) return std::nullopt;
    for (const auto& f : *flag_files)
        k.add("flag_file", normal(f.path.string())).add("flag_file.sha256", f.sha256);
    return Keyed{k.digest(), names_macros};
}

namespace {

// The headers a host compile read besides its inputs, each with its SHA-256,
// whether they or the compile's own text or arguments (`in_code`, found
// while keying it) name the arch macros, and their values: what it keeps
// beside the object, as JSON. nullopt when its dependency file is missing.
std::optional<nlohmann::json> host_compile_meta(const Step& s, bool in_code) {
    // Named by the compile's own text or arguments: only the same values fit.
    bool named = in_code;
    auto deps = read_file(host_compile_depfile(s));
    if (!deps) return std::nullopt;
    nlohmann::json headers = nlohmann::json::object();
    for (const auto& header : parse_depfile(*deps)) {
        if (std::find(s.command.inputs.begin(), s.command.inputs.end(), header) !=
            s.command.inputs.end())
            continue;
        auto text = read_file(header);
        if (!text) return std::nullopt;
        named = named || names_arch_macro(*text);
        headers[header] = sha256_hex(*text);
    }
    std::vector<std::string> macros;
    for (const auto& a : s.command.argv)
        if (is_arch_macro(a)) macros.push_back(a);
    return nlohmann::json{{"headers", headers},
                          {"macros_named", named},
                          {"macros_in_code", in_code},
                          {"macros", macros}};
}

// Whether every header a kept host compile read still has the bytes it had.
bool headers_unchanged(const nlohmann::json& meta) {
    auto headers = meta.find("headers");
    if (headers == meta.end() || !headers->is_object()) return false;
    for (const auto& [path, sha] : headers->items()) {
        auto text = read_file(path);
        if (!text || !sha.is_string() || sha256_hex(*text) != sha.get<std::string>()) return false;
    }
    return true;
}

// The preprocessor directives of cudafe++'s output, with the stub's in
// place of its #include: everything of the host compile that the arch
// macros can reach, once the code is known not to name them.
std::optional<std::string> directives_of(const Step& s) {
    auto text = read_file(s.command.inputs.at(0));
    auto stub = read_file(s.command.inputs.at(1));
    if (!text || !stub) return std::nullopt;
    const std::string stub_name = fs::path(s.command.inputs.at(1)).filename().string();
    std::string out;
    auto take = [&](const std::string& from, bool top) {
        size_t pos = 0;
        while (pos < from.size()) {
            size_t eol = from.find('\n', pos);
            if (eol == std::string::npos) eol = from.size();
            std::string_view line(from.data() + pos, eol - pos);
            size_t first = line.find_first_not_of(" \t");
            bool directive = first != std::string_view::npos && line[first] == '#';
            std::string_view rest = directive ? line.substr(first + 1) : std::string_view();
            rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
            bool marker = !rest.empty() && rest[0] >= '0' && rest[0] <= '9';
            if (directive && !marker) {
                if (top && rest.starts_with("include") &&
                    rest.find("\"" + stub_name + "\"") != std::string_view::npos) {
                    out += "#pragma bekc_stub\n";
                    return true;  // the stub's directives follow
                }
                out.append(line).push_back('\n');
                // A continued directive goes on to the next line.
                while (!line.empty() && line.back() == '\\' && eol < from.size()) {
                    pos = eol + 1;
                    eol = std::min(from.find('\n', pos), from.size());
                    line = std::string_view(from.data() + pos, eol - pos);
                    out.append(line).push_back('\n');
                }
            }
            pos = eol + 1;
        }
        return false;
    };
    if (!take(*text, true)) return std::nullopt;  // no stub include: not the compile it seems
    take(*stub, false);
    return out;
}

}  // namespace

std::optional<std::string> StepReuse::macro_probe(const Step& s,
                                                  const std::vector<std::string>& macros) {
    auto directives = directives_of(s);
    if (!directives) return std::nullopt;
    const std::string& object = s.command.outputs.front();
    fs::path probe = object + ".probe.cpp", out = object + ".probe.ii";
    if (!runner_.write_file(probe, *directives)) return std::nullopt;
    Command c;
    c.env_overrides = s.command.env_overrides;
    c.description = "c++ -E (arch macros)";
    const auto& a = s.command.argv;
    for (size_t i = 0; i < a.size(); ++i) {
        if (is_arch_macro(a[i])) continue;
        if ((a[i] == "-MF" || a[i] == "-o") && i + 1 < a.size()) {
            ++i;
            continue;
        }
        if (a[i] == "-MD") continue;
        if (a[i] == "-c") {
            c.argv.insert(c.argv.end(), {"-E", "-dD"});
            c.argv.insert(c.argv.end(), macros.begin(), macros.end());
            continue;
        }
        c.argv.push_back(a[i] == s.command.inputs.front() ? probe.string() : a[i]);
    }
    c.argv.insert(c.argv.end(), {"-o", out.string()});
    if (!runner_.run_one(c).ok()) return std::nullopt;
    auto text = read_file(out);
    if (!text) return std::nullopt;
    // The macros' own definitions (from the command line) differ by design.
    std::string kept;
    for (size_t pos = 0; pos < text->size();) {
        size_t eol = std::min(text->find('\n', pos), text->size());
        std::string_view line(text->data() + pos, eol - pos);
        if (!line.starts_with("#define __CUDA_ARCH__ ") &&
            !line.starts_with("#define __CUDA_ARCH_LIST__ "))
            kept.append(line).push_back('\n');
        pos = eol + 1;
    }
    return kept;
}

bool StepReuse::host_compile_fits(const Step& s, const std::string& meta_text) {
    auto meta = parse_json(meta_text).value_or(nullptr);
    if (!meta.is_object() || !headers_unchanged(meta)) return false;
    if (!meta.value("macros_named", true)) return true;
    std::vector<std::string> now, then;
    for (const auto& a : s.command.argv)
        if (is_arch_macro(a)) now.push_back(a);
    auto stored = meta.find("macros");
    if (stored == meta.end() || !stored->is_array()) return false;
    for (const auto& m : *stored)
        if (m.is_string()) then.push_back(m.get<std::string>());
    if (then == now) return true;
    if (meta.value("macros_in_code", true)) return false;
    // Named only by headers: the compile's preprocessor must see the same
    // with both.
    auto a = macro_probe(s, then), b = macro_probe(s, now);
    return a && b && *a == *b;
}

StepCacheOutcome StepReuse::reuse(const Step& s) {
    const auto& key = this->key(s);
    if (!key) return StepCacheOutcome::NotKept;
    StepCache steps(cache_);
    const size_t n = s.command.outputs.size();
    std::optional<StepResult> found = steps.find(key->digest, n);
    if (found && s.phase == "host-compile" && !host_compile_fits(s, found->meta)) found.reset();
    if (!found) return StepCacheOutcome::Miss;
    for (size_t i = 0; i < n; ++i)
        if (!runner_.write_file(s.command.outputs[i], found->files[i]))
            return StepCacheOutcome::Miss;
    return StepCacheOutcome::Hit;
}

void StepReuse::keep(const Step& s) {
    const auto& key = this->key(s);
    if (!key) return;
    std::vector<fs::path> outputs(s.command.outputs.begin(), s.command.outputs.end());
    std::string meta = "{}";
    if (s.phase == "host-compile") {
        auto m = host_compile_meta(s, key->names_macros);
        if (!m) return;
        meta = dump_json(*m);
    }
    (void)StepCache(cache_).store(key->digest, outputs, meta, replace_);
}

}  // namespace bekc
