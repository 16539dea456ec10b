#include "plan/command.hpp"

#include <algorithm>
#include <string_view>

namespace bekc {

namespace {

// Characters no POSIX shell treats specially anywhere in a word. `=` is safe
// in arguments but not in the first word, where it would read as an
// assignment; display_command handles that case.
bool is_plain(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
}

}  // namespace

std::string shell_quote(const std::string& word) {
    if (!word.empty() && std::all_of(word.begin(), word.end(), is_plain)) return word;
    // Inside single quotes everything is literal except the quote itself,
    // which has to close the string, appear escaped, and reopen it.
    std::string out = "'";
    for (char c : word) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out += c;
        }
    }
    return out + "'";
}

std::string display_command(const Command& command) {
    std::string out;
    if (!command.cwd.empty()) out += "cd " + shell_quote(command.cwd) + " && ";
    for (const auto& [name, value] : command.env_overrides) {
        out += name + "=" + shell_quote(value) + " ";
    }
    for (size_t i = 0; i < command.argv.size(); ++i) {
        const std::string& arg = command.argv[i];
        bool first = i == 0;
        std::string quoted = shell_quote(arg);
        if (first && quoted == arg && arg.find('=') != std::string::npos) quoted = "'" + arg + "'";
        if (!first) out += ' ';
        out += quoted;
    }
    return out;
}

}  // namespace bekc
