#include "store/base_dir.hpp"

namespace bekc {

BaseDir::BaseDir(const fs::path& dir) {
    std::string d = dir.lexically_normal().string();
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    if (d.size() > 1 && d.front() == '/') dir_ = std::move(d);
}

namespace {

// Whether text[0, at) ends where a path may begin: at the start, after a
// separator ('=', a quote, ':', ',', ';', '(', '<', white space), or after a bare short
// option ("-I", "-isystem"). Inside another path ("/usr" before "/src/inc")
// the base is not a leading component, and is left alone.
bool path_may_start(std::string_view text, size_t at) {
    if (at == 0) return true;
    char before = text[at - 1];
    if (std::string_view("=\"':,;(< \t\n").find(before) != std::string_view::npos) return true;
    std::string_view head = text.substr(0, at);
    size_t line = head.find_last_of(" \t\n");
    if (line != std::string_view::npos) head = head.substr(line + 1);
    return head.size() >= 2 && head[0] == '-' &&
           head.find_first_not_of("-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") ==
               std::string_view::npos;
}

}  // namespace

std::string BaseDir::hide(std::string_view text) const {
    if (dir_.empty()) return std::string(text);
    std::string out;
    size_t from = 0;
    for (size_t at; (at = text.find(dir_, from)) != std::string_view::npos;) {
        size_t end = at + dir_.size();
        bool boundary = (end == text.size() || text[end] == '/' || text[end] == '=' ||
                         text[end] == '"' || text[end] == ':') &&
                        path_may_start(text, at);
        out.append(text.substr(from, at - from));
        if (boundary) {
            out.append(kToken);
            from = end;
        } else {
            out.push_back(text[at]);  // a later occurrence may start inside this one
            from = at + 1;
        }
    }
    out.append(text.substr(from));
    return out;
}

std::optional<std::string> BaseDir::show(std::string_view path) const {
    if (path.substr(0, kToken.size()) != kToken) return std::string(path);
    if (dir_.empty()) return std::nullopt;
    return dir_ + std::string(path.substr(kToken.size()));
}

}  // namespace bekc
