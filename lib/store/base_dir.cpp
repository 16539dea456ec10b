#include "store/base_dir.hpp"

namespace bekc {

BaseDir::BaseDir(const fs::path& dir) {
    std::string d = dir.lexically_normal().string();
    while (d.size() > 1 && d.back() == '/') d.pop_back();
    if (d.size() > 1 && d.front() == '/') dir_ = std::move(d);
}

std::string BaseDir::hide(std::string_view text) const {
    if (dir_.empty()) return std::string(text);
    std::string out;
    size_t from = 0;
    for (size_t at; (at = text.find(dir_, from)) != std::string_view::npos;) {
        size_t end = at + dir_.size();
        bool boundary = end == text.size() || text[end] == '/' || text[end] == '=' ||
                        text[end] == '"' || text[end] == ':';
        out.append(text.substr(from, at - from));
        out.append(boundary ? std::string(kToken) : dir_);
        from = end;
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
