// What goes into the cache keys (SPEC §5; docs/cache.md, "What is in the
// key"). This file alone decides it.
//
// The direct key is known before compiling: bekc's version and embedded
// files, every input's path and bytes, the compilers' identities, the
// environment variables the compilers and the linker read
// (toolchain/compiler_env.hpp), and every step of the build graph with its
// directories normalised, so flags, archs, names and specs enter through the
// commands and wrappers they change. The
// full key adds the bytes of every file the compilers and the linker reported
// reading, and of the headers `__has_include` found, except those of the CUDA
// toolkit and the host compiler's own directories, which the compiler
// identities cover. Direct mode maps direct key -> full key while those files
// are unchanged and no file has appeared where a compiler or the linker would
// have found it first (must_not_exist).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/dependencies.hpp"
#include "plan/build_graph.hpp"
#include "plan/compile_plan.hpp"
#include "prep/build_inputs.hpp"
#include "prep/build_options.hpp"
#include "store/direct.hpp"
#include "store/key.hpp"

namespace bekc {

// The direct key: bekc's version and embedded files, the inputs' paths and
// bytes, the tools' identities and versions, the environment they read, and
// every step of `graph`, the build of `in` planned with placeholder
// directories (graph/recipe.hpp, key_graph): the normalised commands and
// the files bekc writes. A new option reaches the key through the command it
// changes.
KeyBuilder direct_key_builder(const BuildInputs& in, const BuildGraph& graph);

// The portable key: what the direct key holds less the toolchain (the tools'
// identities and paths, and the arch list, which a hit checks against the
// machine instead: portable/portable.hpp): bekc's version and embedded files,
// the module's name, the inputs' bytes and paths, the files the flags name,
// the options that decide the library (prep/build_args.hpp,
// library_options) and the compilers' environment. Known without finding a
// compiler. Paths count relative to portable_base(in).
KeyBuilder portable_key_builder(const BuildInputs& in, const BuildOptions& o);

// What a portable key's paths are relative to: $BEKC_BASE_DIR when set, else
// the Python site directory (site-packages, dist-packages) the first input
// is installed under, so that a package's kernels match wherever it is
// installed; else none. Inline sources in the own cache count relative to
// it (`<cache>/src/...`).
BaseDir portable_base(const BuildInputs& in);

// Paths under `base` count relative to it.
KeyBuilder full_key_builder(const std::string& direct_key, const DependencySet& deps,
                            const BaseDir& base = {});

}  // namespace bekc
