#include "plan/include_flags.hpp"

#include <optional>
#include <string_view>

#include "util/text.hpp"

namespace bekc {

namespace {

enum class Chain { Quote, Angled, System, After };

// A host compiler's options that add an include directory. `attached`: the
// directory may follow the option in the same word (-Iinc); the long
// spellings take it after '=' or as the next word.
// `prefixed`: the directory is the last -iprefix's value followed by the
// option's.
struct HostOption {
    std::string_view name;
    Chain chain;
    bool attached;
    bool prefixed = false;
};
constexpr HostOption kHostOptions[] = {
    {"-I", Chain::Angled, true},
    {"-iquote", Chain::Quote, true},
    {"-isystem", Chain::System, true},
    {"-idirafter", Chain::After, true},
    {"--include-directory", Chain::Angled, false},
    {"--include-directory-after", Chain::After, false},
    // Before -iwithprefix, which it starts with.
    {"-iwithprefixbefore", Chain::Angled, true, true},
    // GCC (checked: g++ 12) searches it as -isystem; clang after the system
    // directories.
    {"-iwithprefix", Chain::System, true, true},
};
// Response files nest this deep at most (toolchain/flag_files refuses
// deeper ones).
constexpr int kMaxResponseDepth = 16;

// Options whose next word is a value of their own, never an option: a
// linker's -I (its dynamic linker) after -Xlinker is no include directory.
constexpr std::string_view kHostValueOptions[] = {
    "-Xlinker", "-Xassembler", "-Xclang", "-o",  "-D", "-U",        "-include",
    "-imacros", "-MF",         "-MT",     "-MQ", "-x", "-isysroot", "--sysroot"};
constexpr std::string_view kNvccValueOptions[] = {"-Xlinker",
                                                  "--linker-options",
                                                  "-Xptxas",
                                                  "--ptxas-options",
                                                  "-Xnvlink",
                                                  "--nvlink-options",
                                                  "-Xarchive",
                                                  "--archive-options",
                                                  "-o",
                                                  "--output-file",
                                                  "-D",
                                                  "--define-macro",
                                                  "-U",
                                                  "--undefine-macro",
                                                  "-include",
                                                  "--pre-include",
                                                  "-ccbin",
                                                  "--compiler-bindir",
                                                  "-x",
                                                  "-optf",
                                                  "--options-file",
                                                  "-odir",
                                                  "--output-directory",
                                                  "-MF",
                                                  "--dependency-output",
                                                  "-MT",
                                                  "--dependency-target-name"};

template <size_t N>
bool takes_value(const std::string_view (&options)[N], std::string_view word) {
    for (auto o : options)
        if (word == o) return true;
    return false;
}

std::vector<std::string>& chain_of(IncludeFlagDirs& d, Chain c) {
    switch (c) {
        case Chain::Quote:
            return d.quote;
        case Chain::System:
            return d.system;
        case Chain::After:
            return d.after;
        case Chain::Angled:
            break;
    }
    return d.angled;
}

// The words of the response file `name` at nesting `depth`, when read.
const std::vector<std::string>* read_words(const ResponseFileWords& files, std::string_view name,
                                           int depth) {
    if (!files || depth > kMaxResponseDepth) return nullptr;
    return files(name);
}

// The words of `w` when it is `@FILE` and the file was read.
const std::vector<std::string>* at_file_words(const ResponseFileWords& files, std::string_view w,
                                              int depth) {
    if (w.size() < 2 || w[0] != '@') return nullptr;
    return read_words(files, w.substr(1), depth);
}

void preprocessor_words(const std::vector<std::string>& words, const ResponseFileWords& files,
                        int depth, std::vector<std::string>& out);

// `w`, or the words of the response file it names.
void add_word(std::string_view w, const ResponseFileWords& files, int depth,
              std::vector<std::string>& out) {
    if (const auto* inner = at_file_words(files, w, depth))
        preprocessor_words(*inner, files, depth + 1, out);
    else
        out.emplace_back(w);
}

// The words the preprocessor gets: response files expanded, -Wp, lists split
// at commas, and the value of each -Xpreprocessor, in place.
void preprocessor_words(const std::vector<std::string>& words, const ResponseFileWords& files,
                        int depth, std::vector<std::string>& out) {
    for (size_t i = 0; i < words.size(); ++i) {
        std::string_view w = words[i];
        if (w.starts_with("-Wp,")) {
            for (auto& piece : split_nonempty(w.substr(4), ",")) add_word(piece, files, depth, out);
        } else if (w == "-Xpreprocessor" && i + 1 < words.size()) {
            add_word(words[++i], files, depth, out);
        } else {
            add_word(w, files, depth, out);
        }
    }
}

// The value `words[i]` gives option `name`: the next word (consumed), after
// '=', or attached when `attached`. nullopt when the word is not `name`.
std::optional<std::string_view> value_of(const std::vector<std::string>& words, size_t& i,
                                         std::string_view name, bool attached) {
    std::string_view w = words[i];
    if (w == name) {
        if (i + 1 >= words.size()) return std::nullopt;
        return std::string_view(words[++i]);
    }
    if (!w.starts_with(name)) return std::nullopt;
    std::string_view rest = w.substr(name.size());
    if (rest.starts_with('=')) return rest.substr(1);
    if (attached) return rest;
    return std::nullopt;
}

// nvcc's flags with each options file (--options-file FILE, -optf FILE, with
// '=' or as the next word) replaced by its words. nvcc itself reads no
// `@FILE` (checked: nvcc 13.0 stops at one); it passes -Xcompiler's to the
// host compiler.
void nvcc_words(const std::vector<std::string>& flags, const ResponseFileWords& files, int depth,
                std::vector<std::string>& out) {
    for (size_t i = 0; i < flags.size(); ++i) {
        const size_t first = i;
        std::optional<std::string_view> v;
        const std::vector<std::string>* inner = nullptr;
        if ((v = value_of(flags, i, "--options-file", false)) ||
            (v = value_of(flags, i, "-optf", false)))
            inner = read_words(files, *v, depth);
        if (inner)
            nvcc_words(*inner, files, depth + 1, out);
        else
            out.insert(out.end(), flags.begin() + first, flags.begin() + i + 1);
    }
}

}  // namespace

IncludeFlagDirs host_include_dirs(const std::vector<std::string>& given,
                                  const ResponseFileWords& files) {
    std::vector<std::string> words;
    preprocessor_words(given, files, 0, words);
    IncludeFlagDirs out;
    std::optional<std::string> prefix;  // the last -iprefix's
    for (size_t i = 0; i < words.size(); ++i) {
        if (takes_value(kHostValueOptions, words[i])) {
            ++i;
            continue;
        }
        if (auto p = value_of(words, i, "-iprefix", true)) {
            prefix = std::string(*p);
            continue;
        }
        for (const auto& o : kHostOptions) {
            auto value = value_of(words, i, o.name, o.attached);
            if (!value) continue;
            if (o.prefixed) {
                if (prefix) chain_of(out, o.chain).push_back(*prefix + std::string(*value));
            } else if (!value->empty() && *value != "-") {  // "-I-" splits the chains
                chain_of(out, o.chain).emplace_back(*value);
            }
            break;
        }
    }
    return out;
}

NvccIncludeDirs nvcc_include_dirs(const std::vector<std::string>& given,
                                  const ResponseFileWords& files) {
    std::vector<std::string> flags;
    nvcc_words(given, files, 0, flags);
    NvccIncludeDirs out;
    std::vector<std::string> host;
    for (size_t i = 0; i < flags.size(); ++i) {
        if (takes_value(kNvccValueOptions, flags[i])) {
            ++i;
            continue;
        }
        std::optional<std::string_view> v;
        if ((v = value_of(flags, i, "-Xcompiler", false)) ||
            (v = value_of(flags, i, "--compiler-options", false))) {
            for (const auto& piece : split_nonempty(*v, ","))
                for (auto& word : split_words(piece)) host.push_back(std::move(word));
        } else if ((v = value_of(flags, i, "-I", true)) ||
                   (v = value_of(flags, i, "--include-path", false))) {
            for (auto& d : split_nonempty(*v, ",")) out.angled.push_back(std::move(d));
        } else if ((v = value_of(flags, i, "-isystem", false)) ||
                   (v = value_of(flags, i, "--system-include", false))) {
            for (auto& d : split_nonempty(*v, ",")) out.system.push_back(std::move(d));
        }
    }
    out.host = host_include_dirs(host, files);
    return out;
}

}  // namespace bekc
