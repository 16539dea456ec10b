#include "codegen/render.hpp"

#include <cstdio>

#include "util/error.hpp"

namespace bekc {

std::string render_template(std::string_view tmpl,
                            const std::map<std::string, std::string>& values) {
    std::string out;
    out.reserve(tmpl.size() * 2);
    size_t pos = 0;
    while (pos < tmpl.size()) {
        size_t open = tmpl.find("@@", pos);
        if (open == std::string_view::npos) break;
        size_t close = tmpl.find("@@", open + 2);
        if (close == std::string_view::npos) break;
        std::string key(tmpl.substr(open + 2, close - open - 2));
        auto it = values.find(key);
        if (it == values.end())
            throw InternalError("template placeholder @@" + key + "@@ has no value");
        out.append(tmpl.substr(pos, open - pos));
        out += it->second;
        pos = close + 2;
    }
    out.append(tmpl.substr(pos));
    return out;
}

std::string c_string_escape(std::string_view s) {
    std::string out;
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\%03o", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

}  // namespace bekc
