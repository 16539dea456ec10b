// The include directories that compile flags add, read as the compilers
// read them: GCC's and Clang's options (--cxx-flag, and what nvcc passes the
// host compiler through -Xcompiler), and nvcc's own (--cuda-flag). Pure:
// directories come back as written; relative ones count from the compile's
// working directory.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace bekc {

// A compiler's search chains, each in command-line order. A quoted include
// looks beside the including file, then in `quote`, `angled`, `system` and
// `after`; an angled one starts at `angled`. The host compiler puts $CPATH
// after `angled`, $CPLUS_INCLUDE_PATH and its own directories after `system`.
struct IncludeFlagDirs {
    std::vector<std::string> quote;   // -iquote
    std::vector<std::string> angled;  // -I, --include-directory
    std::vector<std::string> system;  // -isystem
    std::vector<std::string> after;   // -idirafter, --include-directory-after

    bool empty() const {
        return quote.empty() && angled.empty() && system.empty() && after.empty();
    }
};

// The words of a response file a flag names (`@FILE`, nvcc's
// --options-file FILE), as the compiler reads them; nullptr for a file not
// read (its words stay as they are). Response files nest up to 16 deep.
using ResponseFileWords = std::function<const std::vector<std::string>*(std::string_view name)>;

// A host compiler's words: -I, -iquote, -isystem and -idirafter with the
// directory attached or as the next word, GCC's long spellings, the same
// inside -Wp, and -Xpreprocessor, and each `@FILE` as the words `files` gives
// it. -iwithprefix DIR adds the last -iprefix's value followed by DIR (no
// '/' between) like -isystem (as GCC does), -iwithprefixbefore DIR like -I;
// without an -iprefix they name the compiler's own directories, left out. A
// leading '=' (the sysroot, none here) is dropped.
IncludeFlagDirs host_include_dirs(const std::vector<std::string>& words,
                                  const ResponseFileWords& files = {});

// nvcc's flags. nvcc hands the host compiler the words of every -Xcompiler /
// --compiler-options value (split at commas, then at white space, as its
// shell does) before its own -I and -isystem, so the host compiler sees
// `host`'s chains first, then nvcc's -I (`angled`: bekc's own -I options,
// then these) and nvcc's -isystem (`system`). nvcc's spellings: -I DIR,
// -IDIR, -I=DIR, --include-path[=]DIR, -isystem[=]DIR, --system-include[=]DIR,
// each value a comma-separated list. --options-file/-optf FILE stands for
// the file's words (`files`), as does each `@FILE` the host compiler gets.
struct NvccIncludeDirs {
    IncludeFlagDirs host;
    std::vector<std::string> angled, system;
};
NvccIncludeDirs nvcc_include_dirs(const std::vector<std::string>& flags,
                                  const ResponseFileWords& files = {});

}  // namespace bekc
