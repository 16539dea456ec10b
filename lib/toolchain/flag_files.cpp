#include "toolchain/flag_files.hpp"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>

#include "store/file_ops.hpp"
#include "store/hash.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace bekc {

namespace {

// GCC's and Clang's options whose value is a file they read (the options
// that take a directory instead are refused with them: bekc cannot key a
// directory's contents).
constexpr std::array<std::string_view, 11> kFileOptions = {"-specs=",
                                                           "--specs=",
                                                           "-fprofile-use=",
                                                           "-fprofile-sample-use=",
                                                           "-fprofile-instr-use=",
                                                           "-fauto-profile=",
                                                           "-fplugin=",
                                                           "-fpass-plugin=",
                                                           "-fsanitize-ignorelist=",
                                                           "-fsanitize-blacklist=",
                                                           "-fprofile-dir="};
// nvcc's: the value (after '=' or as the next word) is a response file.
constexpr std::array<std::string_view, 2> kNvccOptionFiles = {"--options-file", "-optf"};
// Options whose value is a comma list of arguments for another tool (GCC's
// for the assembler, the linker and the preprocessor; nvcc's for the host
// compiler, the linker, ptxas and nvlink): each item is read as a word.
constexpr std::array<std::string_view, 9> kCommaLists = {"-Wa,",
                                                         "-Wl,",
                                                         "-Wp,",
                                                         "-Xcompiler=",
                                                         "--compiler-options=",
                                                         "-Xlinker=",
                                                         "--linker-options=",
                                                         "-Xptxas=",
                                                         "-Xnvlink="};
// Options whose next word is one argument (or, for nvcc, a comma list of
// them) for another tool.
constexpr std::array<std::string_view, 6> kPassesNext = {"-Xcompiler",  "--compiler-options",
                                                         "-Xlinker",    "--linker-options",
                                                         "-Xassembler", "-Xpreprocessor"};
// A nesting this deep is a loop or a mistake.
constexpr int kMaxDepth = 16;

class Collector {
  public:
    Collector(const fs::path& cwd) : cwd_(cwd) {}

    // One word of a command line, given as `shown` (the user's flag).
    void word(std::string_view w, const std::string& shown, int depth) {
        if (w.starts_with("@") && w.size() > 1) return response_file(w.substr(1), shown, depth);
        for (auto o : kNvccOptionFiles)
            if (w.starts_with(o) && w.size() > o.size() && w[o.size()] == '=')
                return response_file(w.substr(o.size() + 1), shown, depth);
        for (auto o : kFileOptions)
            if (w.starts_with(o)) {
                key(w.substr(o.size()), shown, false, depth);
                return;
            }
        for (auto list : kCommaLists)
            if (w.starts_with(list)) {
                for (const auto& item : split_nonempty(w.substr(list.size()), ","))
                    word(item, shown, depth);
                return;
            }
    }

    // A flag whose value is the next word (`-optf FILE`, `-Xcompiler @FILE`).
    // Each word is shown as `what`, or as itself after `origin` (where the
    // list came from: "$NVCC_APPEND_FLAGS' ").
    void words(const std::vector<std::string>& list, const std::string& what, int depth,
               const std::string& origin = "") {
        for (size_t i = 0; i < list.size(); ++i) {
            std::string shown = what.empty() ? origin + list[i] : what;
            bool optf = std::find(kNvccOptionFiles.begin(), kNvccOptionFiles.end(), list[i]) !=
                        kNvccOptionFiles.end();
            bool passes_next =
                std::find(kPassesNext.begin(), kPassesNext.end(), list[i]) != kPassesNext.end();
            if ((optf || passes_next) && i + 1 < list.size()) {
                ++i;
                if (optf)
                    response_file(list[i], shown + " " + list[i], depth);
                else
                    word(list[i], shown + " " + list[i], depth);
                continue;
            }
            word(list[i], shown, depth);
        }
    }

    std::expected<std::vector<FlagFile>, Error> take() {
        if (error_) return std::unexpected(std::move(*error_));
        return std::move(files_);
    }

  private:
    void response_file(std::string_view name, const std::string& shown, int depth) {
        size_t at = files_.size();
        std::string text = key(name, shown, true, depth);
        if (error_) return;
        std::vector<std::string> list = response_file_words(text);
        if (at < files_.size()) files_[at].words = list;  // read for the first time
        words(list, shown, depth + 1);
    }

    // Reads and keys one file; its bytes when `keep`.
    std::string key(std::string_view name, const std::string& shown, bool keep, int depth) {
        if (error_) return {};
        if (name.empty() || depth > kMaxDepth)
            return refuse("'" + shown +
                          "' names no file bekc can follow (or response files nest more than 16 "
                          "deep)");
        fs::path p = physical_normal(cwd_ / fs::path(name));  // as the tools open it
        auto digest = digest_file(p, keep);
        if (!digest || !digest->stat.is_regular)
            return refuse("'" + shown + "' makes the compiler read a file bekc must key: " +
                          (digest ? "cannot read " + p.string() + ": not a regular file"
                                  : digest.error().message) +
                          "; name a regular file, or pass its flags directly");
        if (seen_.insert(p).second) files_.push_back({p, digest->sha256});
        return std::move(digest->text);
    }

    // The first file refused stops the walk: every later word reads nothing.
    std::string refuse(std::string message) {
        if (!error_) error_ = Error::make(ErrorKind::Usage, std::move(message));
        return {};
    }

    fs::path cwd_;
    std::optional<Error> error_;
    std::set<fs::path> seen_;
    std::vector<FlagFile> files_;
};

}  // namespace

std::vector<std::string> response_file_words(std::string_view text) {
    std::vector<std::string> out;
    std::string cur;
    bool in_word = false;
    char quote = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (c == '\\' && i + 1 < text.size()) {
            cur += text[++i];
            in_word = true;
        } else if (quote) {
            if (c == quote)
                quote = 0;
            else
                cur += c;
        } else if (c == '\'' || c == '"') {
            quote = c;
            in_word = true;
        } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            if (in_word) out.push_back(std::move(cur));
            cur.clear();
            in_word = false;
        } else {
            cur += c;
            in_word = true;
        }
    }
    if (in_word) out.push_back(std::move(cur));
    return out;
}

std::expected<std::vector<FlagFile>, Error> read_flag_files(const CompileFlags& flags,
                                                            const NvccEnvFlags& nvcc_env,
                                                            const fs::path& cwd) {
    Collector c(cwd);
    c.words(flags.cxx_flags, "", 0);
    c.words(flags.cuda_flags, "", 0);
    c.words(nvcc_env.prepend, "", 0, "$NVCC_PREPEND_FLAGS' ");
    c.words(nvcc_env.append, "", 0, "$NVCC_APPEND_FLAGS' ");
    c.words(flags.ldflags, "", 0);
    // Each reaches the linker as one argument; GNU ld expands @FILE itself.
    for (const auto& a : flags.linker_args) c.word(a, "--linker-arg=" + a, 0);
    return c.take();
}

std::expected<std::vector<FlagFile>, Error> read_command_flag_files(
    const std::vector<std::string>& argv, const fs::path& cwd) {
    Collector c(cwd);
    if (!argv.empty()) c.words({argv.begin() + 1, argv.end()}, "", 0);
    return c.take();
}

const std::vector<std::string>* response_file_words_of(const std::vector<FlagFile>& files,
                                                       std::string_view name, const fs::path& cwd) {
    if (name.empty()) return nullptr;
    fs::path p = physical_normal(cwd / fs::path(name));  // as Collector::key opens it
    for (const auto& f : files)
        if (f.path == p && f.words) return &*f.words;
    return nullptr;
}

std::optional<std::string> flag_file_changed(const std::vector<FlagFile>& files, int64_t start_ns) {
    for (const auto& f : files) {
        auto digest = digest_file(f.path);
        if (!digest || digest->changed || digest->sha256 != f.sha256 ||
            std::max(digest->stat.mtime_ns, digest->stat.ctime_ns) >= start_ns)
            return f.path.string();
    }
    return std::nullopt;
}

}  // namespace bekc
