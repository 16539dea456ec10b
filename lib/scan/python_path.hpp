// The file a kernel load's path argument names, evaluated from its text the
// way pathlib would, relative to the .py file that holds the call. Pure: it
// reads no file and runs no Python.
//
// The forms understood start at `Path(__file__)` (or `pathlib.Path(__file__)`)
// and apply, in any order and number:
//
//   .parent                  the directory above
//   .resolve(), .absolute()  nothing (the .py file's path is already canonical)
//   .joinpath('a', 'b.cu')   append literals
//   / 'b.cu'                 append a literal
//   .with_name('b.cu')       replace the last component
//   .with_suffix('.cu')      replace the last component's suffix
//
// brainevent 0.3.0 loads `_tcsr/dt2t.cu` with
// `Path(__file__).with_suffix(".cu")` from `_tcsr/dt2t.py`, and
// `_tcsr/bpsa/bpsa_mm.cu` with `Path(__file__).with_name("bpsa_mm.cu")`.
// Anything else (a variable, a conditional, an f-string, an absolute or
// empty literal) is not understood: the load's file is then unknown.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace bekc {

// `py_file` is a '/'-separated path (relative or absolute); the result is one
// too, without "." components. ".." components are kept as written: the
// caller decides whether the result is inside the package.
std::optional<std::string> evaluate_load_path(std::string_view path_text, std::string_view py_file);

// pathlib's `stem`: the last component without its suffix ("dt2t.cu" ->
// "dt2t", ".hidden" -> ".hidden"); brainevent's default module name.
std::string path_stem(std::string_view path);

}  // namespace bekc
