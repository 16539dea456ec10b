// libbekc_lookup.so: `bekc build --json` answered inside the Python process
// on a local cache hit (warm/warm_lookup.hpp), so a warm load starts no
// process. Everything else is "not handled", and Python runs the binary.
//
// The C ABI is versioned by its function names and bekc_lookup_abi_version.
// It cannot take the host process down: every exception stops at this
// boundary and becomes "not handled"; nothing here installs a signal
// handler, exits, or writes to stdout or stderr (what the binary would print
// on stderr comes back in `messages`). Calls are serialized by one lock.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "config/cache_choice.hpp"
#include "util/json_text.hpp"
#include "warm/warm_lookup.hpp"

#define BEKC_LOOKUP_API extern "C" __attribute__((visibility("default")))

namespace {

constexpr int kAbiVersion = 1;
constexpr int kHit = 0;
constexpr int kNotHandled = 1;

std::mutex g_lock;

// A copy the caller frees with bekc_lookup_free; null when out of memory.
char* copy_out(const std::string& s) {
    char* p = static_cast<char*>(std::malloc(s.size() + 1));
    if (p) std::memcpy(p, s.c_str(), s.size() + 1);
    return p;
}

}  // namespace

BEKC_LOOKUP_API int bekc_lookup_abi_version(void) {
    return kAbiVersion;
}

// argv: the binary's argument vector ("bekc", "build", ...). Returns 0 on a
// local hit, with *json (the line `bekc build --json` prints, no newline)
// and *messages (its stderr, often empty) allocated; 1 otherwise, with both
// left null. Free them with bekc_lookup_free.
BEKC_LOOKUP_API int bekc_lookup_v1(int argc, const char* const* argv, char** json,
                                   char** messages) {
    if (!json || !messages) return kNotHandled;
    *json = nullptr;
    *messages = nullptr;
    if (argc < 1 || !argv) return kNotHandled;
    try {
        std::vector<std::string> args;
        for (int i = 0; i < argc; ++i) {
            if (!argv[i]) return kNotHandled;
            args.emplace_back(argv[i]);
        }
        std::lock_guard guard(g_lock);
        std::optional<bekc::WarmHit> hit = bekc::warm_lookup(args);
        if (!hit) return kNotHandled;
        char* j = copy_out(hit->json);
        char* m = copy_out(hit->messages);
        if (!j || !m) {
            std::free(j);
            std::free(m);
            return kNotHandled;
        }
        *json = j;
        *messages = m;
        return kHit;
    } catch (...) {  // FatalError, bad_alloc, anything: the binary answers
        return kNotHandled;
    }
}

// The cache `bekc config --json [--cache-dir=FLAG]` names in its "cache"
// member (config/cache_choice.hpp), for `cache_dir_flag` (null: none). Returns
// 0 with *json (that member, one line) allocated; 1 otherwise (a bekc.conf
// with errors, no HOME), with *json left null, and the binary answers.
BEKC_LOOKUP_API int bekc_lookup_cache_v1(const char* cache_dir_flag, char** json) {
    if (!json) return kNotHandled;
    *json = nullptr;
    try {
        std::optional<std::string> flag;
        if (cache_dir_flag) flag = cache_dir_flag;
        std::lock_guard guard(g_lock);
        auto choice = bekc::choose_cache(flag, bekc::system_env());
        if (!choice) return kNotHandled;
        *json = copy_out(bekc::dump_json(bekc::cache_choice_json(*choice)));
        return *json ? kHit : kNotHandled;
    } catch (...) {  // bad_alloc, anything: the binary answers
        return kNotHandled;
    }
}

BEKC_LOOKUP_API void bekc_lookup_free(char* p) {
    std::free(p);
}
