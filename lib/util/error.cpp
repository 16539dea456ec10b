#include "util/error.hpp"

#include "util/exit_codes.hpp"

namespace bekc {

const ExitCodeRow* exit_code_row(ErrorKind kind) {
    for (const ExitCodeRow& row : kExitCodeRows)
        if (row.kind == kind) return &row;
    return nullptr;
}

int exit_code_of(ErrorKind kind) {
    if (kind == ErrorKind::Interrupted) return 128;
    const ExitCodeRow* row = exit_code_row(kind);
    return row ? row->code : kExitInternal;
}

int Error::exit_code() const {
    return exit_code_of(kind) + (kind == ErrorKind::Interrupted ? signal : 0);
}

Error& Error::within(std::string_view context) {
    message = std::string(context) + ": " + message;
    return *this;
}

Error& Error::as(ErrorKind seen_as) {
    kind = seen_as;
    return *this;
}

Error& Error::note(std::string text) {
    notes.push_back(std::move(text));
    return *this;
}

std::string Error::render() const {
    std::string out;
    if (!message.empty()) {
        out = file.empty() ? "bekc" : file;
        if (!file.empty() && line > 0) out += ':' + std::to_string(line);
        out += kind == ErrorKind::Interrupted ? ": " : ": error: ";
        out += message;
    }
    for (const auto& n : notes) out += (out.empty() ? "note: " : "\nnote: ") + n;
    return out;
}

Error Error::make(ErrorKind kind, std::string message) {
    Error e;
    e.kind = kind;
    e.message = std::move(message);
    return e;
}

Error Error::at(ErrorKind kind, std::string file, int line, std::string message) {
    Error e = make(kind, std::move(message));
    e.file = std::move(file);
    e.line = line;
    return e;
}

}  // namespace bekc
