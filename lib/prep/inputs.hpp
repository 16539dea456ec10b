// The first stage of every command: expanding the inputs named on the command
// line into source files, reading them, and scanning each one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "diag/diagnostic.hpp"
#include "scan/scanner.hpp"
#include "util/fs.hpp"

namespace bekc {

struct SourceFile {
    fs::path path;      // as the user named it (or dir / name)
    bool cuda = false;  // .cu
    std::string text;
    std::vector<FunctionSpec> functions;
};

struct ScannedInputs {
    std::vector<SourceFile> files;  // in command-line order, directories sorted
    std::vector<Diagnostic> diagnostics;
};

// The largest kernel source bekc reads; a larger one is refused, not scanned.
inline constexpr uint64_t kMaxSourceBytes = uint64_t{64} << 20;
// The largest JSON file named on the command line (--functions) bekc reads.
inline constexpr uint64_t kMaxOptionFileBytes = uint64_t{16} << 20;

// Files stand for themselves; a directory for every .cu/.cpp/.cc/.cxx directly
// in it, sorted by name. Unknown extensions, missing paths and paths that are
// neither a directory nor a regular file (a FIFO, /dev/zero) are Usage errors
// naming the input.
std::expected<std::vector<fs::path>, Error> expand_inputs(const std::vector<std::string>& inputs);

// The longest module name (--name, or the first input's stem) and target
// prefix: lib<name>.so, and the temporaries written beside it
// ("<file>.tmp.<host>.<pid>.<random>"), must fit in a file name (NAME_MAX,
// 255 bytes) with room to spare.
inline constexpr size_t kMaxModuleNameLength = 128;

// A Usage error when `name` or `target_prefix` is longer than
// kMaxModuleNameLength; `name_origin` says where the name came from
// ("--name", or "the first input's stem"). The other rules on both (an
// identifier, the prefix's characters) are checked where they are defaulted.
std::expected<void, Error> check_name_lengths(const std::string& name, std::string_view name_origin,
                                              const std::string& target_prefix);

// The deepest nesting of arrays and objects bekc accepts in a JSON file the
// user names. nlohmann's parser is iterative, but copying and dumping a value
// recurse, so a deeper document could overflow the stack.
inline constexpr int kMaxJsonDepth = 64;

// The 1-based line on which `text` (JSON) opens an array or object more than
// `max_depth` levels deep, or 0 when it does not. Brackets inside strings do
// not count; malformed text is left to the parser.
size_t json_nesting_excess_line(std::string_view text, int max_depth = kMaxJsonDepth);

// Parses `text`, the content of `path`, a file the user named. Nesting deeper
// than kMaxJsonDepth and malformed JSON are Usage errors naming the file and
// the line.
std::expected<nlohmann::ordered_json, Error> parse_user_json(std::string_view text,
                                                             const fs::path& path);

enum class InputsAre {
    OneModule,   // `bekc build`: the files link into one library
    Independent  // `bekc inspect`: each file reported on its own
};

// Reads and scans every file. Cross-file rules live here: explicit specs that
// no input defines and, for one module, a function defined in two inputs.
// A file that cannot be read is a Usage error; what the scan finds wrong is
// in the diagnostics.
std::expected<ScannedInputs, Error> scan_inputs(const std::vector<fs::path>& paths,
                                                const std::vector<ExplicitSpec>& explicit_specs,
                                                InputsAre kind = InputsAre::OneModule);

// Reads `--functions FILE.json`: {"name": ["arg", "ret", ...]}. What is
// wrong with it is a Usage error naming the file.
std::expected<std::vector<ExplicitSpec>, Error> read_functions_json(const fs::path& path);

// Every `--function` value, then the `--functions` file if given. A bad
// value is a Usage error.
std::expected<std::vector<ExplicitSpec>, Error> collect_explicit_specs(
    const std::vector<std::string>& functions, const std::string& functions_json);

}  // namespace bekc
