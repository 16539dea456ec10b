// The second phase of `bekc build` (driver/build.hpp): the graph planned once
// and the keys read from it. The graph is laid out with placeholder
// directories (graph/recipe.hpp): the direct key hashes its steps, and
// --explain-key prints that record. On a miss, execute fills the same recipe
// in with the build's own directories and runs it; --dry-run fills it in and
// prints it. Planning writes nothing and starts nothing.
#pragma once

#include <expected>
#include <string>
#include <vector>

#include "graph/recipe.hpp"
#include "plan/build_graph.hpp"
#include "prep/build_inputs.hpp"
#include "prep/build_options.hpp"
#include "util/error.hpp"

namespace bekc {

struct PlannedBuild {
    std::vector<std::string> targets;  // the XLA target of every exported function
    // What the graph is made of but its directories, and the graph laid out
    // with the placeholders. Empty when no toolchain is found
    // (BuildInputs::toolchain_missing): such a build can only be a hit.
    GraphRecipe recipe;
    BuildGraph graph;
    // The direct key, read from `graph`, and the record it hashes
    // (KeyBuilder::explain); empty without a toolchain.
    std::string direct_key, direct_key_record;
    // The portable key (graph/keys.hpp), all a plan has when no toolchain is
    // found, and its record, with --explain-key only.
    std::string portable_key, portable_key_record;
    // The start of the private build directory's name (graph/recipe.hpp,
    // build_dir_name).
    std::string dir_name;
};

// A wrapper that cannot be rendered (a source path an #include cannot name,
// two exports of one handler) is the Error.
std::expected<PlannedBuild, Error> plan(const BuildInputs& in, const BuildOptions& o);

}  // namespace bekc
