// Filling `@@NAME@@` placeholders in the embedded templates.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace bekc {

// Replaces every `@@KEY@@` by its value; a placeholder without a value is a bug
// in bekc and throws InternalError, so no template ships half-filled.
std::string render_template(std::string_view tmpl,
                            const std::map<std::string, std::string>& values);

// Escapes text for use inside a C string literal (also in #line directives).
std::string c_string_escape(std::string_view s);

}  // namespace bekc
