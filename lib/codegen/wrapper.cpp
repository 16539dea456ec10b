#include "codegen/wrapper.hpp"

#include <algorithm>
#include <map>

#include "codegen/render.hpp"
#include "util/embedded.hpp"
#include "util/error.hpp"
#include "util/version.hpp"

namespace bekc {

namespace {

// The C++ parameter type the spec implies for each token: the pointer the
// user's function must convert to.
std::string param_type(const Token& t) {
    switch (t.kind) {
        case TokenKind::Arg:
            return t.by_reference ? "const BE::Tensor&" : "const BE::Tensor";
        case TokenKind::Ret:
            return "BE::Tensor";
        case TokenKind::Stream:
            return "int64_t";
        case TokenKind::Attr:
            return std::string(attr_type_info(t.attr_type).cxx_type);
    }
    return {};
}

std::string join(const std::vector<std::string>& parts) {
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
    return out;
}

// `fn`'s attributes sorted by name: XLA hands them over in that order, and the
// handler looks them up by that index. Names reach generated code only after
// the scanner validated them as identifiers; they are checked again here,
// where they are emitted.
std::vector<const Token*> checked_attrs_by_name(const FunctionSpec& fn) {
    if (!is_cxx_identifier(fn.name)) throw InternalError("invalid function name reached codegen");
    std::vector<const Token*> attrs;
    for (const auto& t : fn.tokens) {
        if (t.kind != TokenKind::Attr) continue;
        if (!is_cxx_identifier(t.attr_name))
            throw InternalError("invalid attribute name reached codegen");
        attrs.push_back(&t);
    }
    std::sort(attrs.begin(), attrs.end(),
              [](const Token* a, const Token* b) { return a->attr_name < b->attr_name; });
    return attrs;
}

// Where each parameter of the user's function comes from, in parameter order.
std::string render_slots(const FunctionSpec& fn, const std::vector<const Token*>& sorted) {
    std::vector<std::string> slots;
    size_t arg = 0, ret = 0;
    for (const auto& t : fn.tokens) {
        size_t index = 0;
        std::string kind;
        switch (t.kind) {
            case TokenKind::Arg:
                kind = "bekc_rt::kSlotArg", index = arg++;
                break;
            case TokenKind::Ret:
                kind = "bekc_rt::kSlotRet", index = ret++;
                break;
            case TokenKind::Stream:
                kind = "bekc_rt::kSlotStream";
                break;
            case TokenKind::Attr:
                kind = "bekc_rt::kSlotAttr";
                index = static_cast<size_t>(std::find(sorted.begin(), sorted.end(), &t) -
                                            sorted.begin());
                break;
        }
        if (index > 0xffff)
            throw InternalError("a parameter index beyond a Slot's reached codegen");
        slots.push_back("{" + kind + ", " + std::to_string(index) + "}");
    }
    if (slots.empty()) throw InternalError("a function without parameters reached codegen");
    return join(slots);
}

std::string render_function(const WrapperRequest& req, const FunctionSpec& fn) {
    auto sorted = checked_attrs_by_name(fn);
    std::vector<std::string> params;
    for (const auto& t : fn.tokens) params.push_back(param_type(t));
    return render_template(embedded("templates/function.cpp.in"),
                           {{"FUNCTION", fn.name},
                            {"TARGET", c_string_escape(target_name(req.target_prefix, fn.name))},
                            {"SOURCE_DISPLAY", req.display_path},
                            {"SOURCE_LINE_FILE", c_string_escape(req.display_path)},
                            {"WRAPPER_FILE", c_string_escape(req.wrapper_name)},
                            {"LINE", std::to_string(fn.annotation.line)},
                            {"RESET_LINE", "@@RESET_LINE@@"},
                            {"PARAM_TYPES", join(params)},
                            {"SLOTS", render_slots(fn, sorted)}});
}

std::string render_exports(const WrapperRequest& req) {
    std::string entries;
    for (const auto& fn : req.functions)
        entries += "    {bekc_rt::invoker(bekc_fn_" + fn.name + "), &bekc_fn_" + fn.name +
                   ", bekc_slots_" + fn.name + "},\n";
    return render_template(embedded("templates/wrapper_exports.cpp.in"),
                           {{"TABLE", exports_table(req.unit)}, {"ENTRIES", entries}});
}

// Function `index` of `req`'s table: what XLA must send, and its two entry points.
std::string render_handler(const WrapperRequest& req, const FunctionSpec& fn, size_t index) {
    auto sorted = checked_attrs_by_name(fn);
    std::string attr_specs;
    for (const Token* t : sorted)
        attr_specs += "{\"" + t->attr_name + "\", " +
                      std::to_string(attr_type_info(t->attr_type).xla_dtype) + ", \"" +
                      std::string(attr_type_info(t->attr_type).name) + "\"}, ";
    return render_template(embedded("templates/handler.cpp.in"),
                           {{"FUNCTION", fn.name},
                            {"TARGET", c_string_escape(target_name(req.target_prefix, fn.name))},
                            {"SOURCE_DISPLAY", req.display_path},
                            {"LINE", std::to_string(fn.annotation.line)},
                            {"ATTR_SPECS", attr_specs},
                            {"NUM_ARGS", std::to_string(fn.num_args())},
                            {"NUM_RETS", std::to_string(fn.num_rets())},
                            {"NUM_ATTRS", std::to_string(sorted.size())},
                            {"NEEDS_STREAM", fn.has_stream() ? "true" : "false"},
                            {"SYMBOL", handler_symbol(fn.name)},
                            {"TABLE", exports_table(req.unit)},
                            {"INDEX", std::to_string(index)}});
}

// `#line N "wrapper"` after the signature check must name the wrapper's real
// next line, which is known only once the whole file is laid out.
std::string fix_line_resets(std::string text) {
    std::string out;
    size_t line = 1, pos = 0;
    const std::string marker = "@@RESET_LINE@@";
    while (pos < text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        std::string l = text.substr(pos, eol - pos);
        if (size_t m = l.find(marker); m != std::string::npos)
            l.replace(m, marker.size(), std::to_string(line + 1));
        out += l;
        if (eol < text.size()) out += '\n';
        pos = eol + 1;
        ++line;
    }
    return out;
}

// Two exports `f` and `f_nograph` would both define `bekc_ffi_f_nograph`
// (the second's handler, the first's variant without the command-buffer
// trait); say so at the user's annotation instead of letting the compiler
// report a redefinition in the generated file.
std::expected<void, Error> check_symbol_clashes(const WrapperRequest& req) {
    std::map<std::string, const FunctionSpec*> by_name;
    for (const auto& fn : req.functions) by_name.emplace(fn.name, &fn);
    for (const auto& fn : req.functions) {
        auto it = by_name.find(fn.name + "_nograph");
        if (it == by_name.end()) continue;
        const FunctionSpec& other = *it->second;
        return std::unexpected(
            Error::at(ErrorKind::Source, other.annotation.file, other.annotation.line,
                      "exported functions '" + fn.name + "' and '" + other.name +
                          "' would both define the handler symbol '" + handler_symbol(other.name) +
                          "' (bekc names the variant of '" + fn.name +
                          "' without the command-buffer trait '" + handler_symbol_nograph(fn.name) +
                          "'); rename '" + other.name + "'"));
    }
    return {};
}

}  // namespace

std::expected<std::string, Error> render_wrapper(const WrapperRequest& req) {
    if (req.source_path.find_first_of("\"\\\n\r") != std::string::npos)
        return std::unexpected(Error::at(ErrorKind::Usage, req.display_path, 0,
                                         "bekc cannot #include a path that contains '\"', "
                                         "'\\' or a line break; rename the file or its "
                                         "directory"));
    if (auto unique = check_symbol_clashes(req); !unique) return std::unexpected(unique.error());
    std::string out = render_template(embedded("templates/wrapper_prelude.cpp.in"),
                                      {{"VERSION", kVersion},
                                       {"SOURCE_DISPLAY", req.display_path},
                                       {"SOURCE_INCLUDE", req.source_path}});
    for (const auto& fn : req.functions) out += render_function(req, fn);
    if (!req.functions.empty()) out += render_exports(req);
    out += "#endif  // !defined(__CUDA_ARCH__)\n";
    return fix_line_resets(std::move(out));
}

std::string exports_table(size_t unit) {
    return "bekc_exports_" + std::to_string(unit);
}

std::string render_handlers(const std::string& library, const std::vector<WrapperRequest>& units) {
    std::string out = render_template(embedded("templates/handlers_prelude.cpp.in"),
                                      {{"VERSION", kVersion}, {"LIBRARY", library}});
    for (const auto& u : units)
        if (!u.functions.empty())
            out +=
                "extern \"C\" BEKC_HIDDEN const bekc_rt::Export " + exports_table(u.unit) + "[];\n";
    for (const auto& u : units)
        for (size_t i = 0; i < u.functions.size(); ++i) out += render_handler(u, u.functions[i], i);
    return out;
}

}  // namespace bekc
