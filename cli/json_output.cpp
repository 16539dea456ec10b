#include "json_output.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "diag/diagnostic_text.hpp"
#include "util/exit_codes.hpp"
#include "util/json_text.hpp"

namespace bekc::cli {

namespace {

using Json = nlohmann::ordered_json;

// The copy's write function: the bytes to standard error, and into the copy.
// The copy keeps the first kCopyLimit bytes: a compiler's flood of errors
// cannot grow it without bound, and the first errors are the ones that count.
constexpr size_t kCopyLimit = size_t{1} << 20;

ssize_t write_both(void* cookie, const char* data, size_t size) {
    auto* copy = static_cast<std::string*>(cookie);
    if (copy->size() < kCopyLimit) copy->append(data, std::min(size, kCopyLimit - copy->size()));
    for (size_t done = 0; done < size;) {
        ssize_t n = ::write(STDERR_FILENO, data + done, size - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;  // standard error closed: the copy still has the text
        done += static_cast<size_t>(n);
    }
    return static_cast<ssize_t>(size);
}

std::string_view kind_name(ErrorKind kind) {
    if (const ExitCodeRow* row = exit_code_row(kind)) return row->name;
    return "interrupted";
}

Json or_null(const std::string& s) {
    return s.empty() ? Json(nullptr) : Json(s);
}

Json or_null(int n) {
    return n > 0 ? Json(n) : Json(nullptr);
}

Json diagnostic_json(const TextDiagnostic& d) {
    return {{"severity", d.severity},        {"file", or_null(d.where.file)},
            {"line", or_null(d.where.line)}, {"column", or_null(d.where.column)},
            {"message", d.message},          {"notes", d.notes}};
}

// The Error; when its message was printed already (scan errors, a missing
// header: diagnostics in compiler format), the first error among them.
Json error_json(const Error& error, const std::vector<TextDiagnostic>& diagnostics) {
    Location where{error.file, error.line, 0};
    std::string message = error.message;
    std::vector<std::string> notes = error.notes;
    if (message.empty())
        for (const auto& d : diagnostics) {
            if (d.severity != "error" && d.severity != "fatal error") continue;
            where = d.where;
            message = d.message;
            notes.insert(notes.begin(), d.notes.begin(), d.notes.end());
            break;
        }
    return {{"kind", std::string(kind_name(error.kind))},
            {"message", message},
            {"file", or_null(where.file)},
            {"line", or_null(where.line)},
            {"column", or_null(where.column)},
            {"notes", notes}};
}

}  // namespace

void print_json(const nlohmann::ordered_json& value) {
    std::puts(dump_json(value).c_str());
}

bool json_requested(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--") == 0) return false;
        if (std::strcmp(argv[i], "--json") == 0) return true;
    }
    return false;
}

StderrCopy::StderrCopy() {
    cookie_io_functions_t io{nullptr, write_both, nullptr, nullptr};
    FILE* copy = ::fopencookie(&text_, "w", io);
    if (!copy) return;  // no copy: the JSON then has no diagnostics
    std::setvbuf(copy, nullptr, _IONBF, 0);
    std::fflush(stderr);
    saved_ = stderr;
    stderr = copy;
}

StderrCopy::~StderrCopy() {
    if (!saved_) return;
    FILE* copy = stderr;
    stderr = saved_;
    std::fclose(copy);
}

void print_failure_json(const Error& error, std::string_view stderr_text) {
    std::vector<TextDiagnostic> diagnostics = read_diagnostics(stderr_text);
    Json list = Json::array();
    for (const auto& d : diagnostics) list.push_back(diagnostic_json(d));
    print_json({{"error", error_json(error, diagnostics)},
                {"exit_code", error.exit_code()},
                {"diagnostics", list},
                {"stderr", std::string(stderr_text)}});
}

}  // namespace bekc::cli
