#include <catch2/catch.hpp>

#include "../helpers/fatal.hpp"
#include "../helpers/temp_dir.hpp"
#include "store/hash.hpp"
#include "toolchain/flag_files.hpp"

#include <limits>

using namespace bekc;
using bekc::test::TempDir;
using bekc::test::write_file;

namespace {

std::vector<std::string> paths_of(const std::vector<FlagFile>& files, const TempDir& t) {
    std::vector<std::string> out;
    for (const auto& f : files) out.push_back(f.path.lexically_relative(t.path()).string());
    return out;
}

}  // namespace

TEST_CASE("response file words split as GCC splits them", "[flag_files]") {
    CHECK(response_file_words("-DA=1  -DB='two words'\n\"-DC=x\\\"y\" back\\ slash") ==
          std::vector<std::string>{"-DA=1", "-DB=two words", "-DC=x\"y", "back slash"});
    CHECK(response_file_words("''") == std::vector<std::string>{""});
    CHECK(response_file_words(" \t\n").empty());
}

TEST_CASE("files named by flags are keyed, response files recursively", "[flag_files]") {
    TempDir t;
    write_file(t / "outer.rsp", "-DX=1 @inner.rsp '-specs=my specs'\n");
    write_file(t / "inner.rsp", "-DY=2\n");
    write_file(t / "my specs", "*cpp:\n");
    write_file(t / "plugin.so", "ELF");
    write_file(t / "opts.txt", "-DZ=3");
    write_file(t / "ld.rsp", "-lm");
    CompileFlags f;
    f.cxx_flags = {"@outer.rsp", "-O2"};
    f.cuda_flags = {"-Xcompiler=-fplugin=" + (t / "plugin.so").string(), "-optf", "opts.txt"};
    f.ldflags = {"-Wl,@ld.rsp"};
    auto files = read_flag_files(f, {}, t.path()).value();
    CHECK(paths_of(files, t) == std::vector<std::string>{"outer.rsp", "inner.rsp", "my specs",
                                                         "plugin.so", "opts.txt", "ld.rsp"});
    CHECK(files[1].sha256 == sha256_hex("-DY=2\n"));
    // The response files' words, as read, by the names the flags give them.
    const auto* outer = response_file_words_of(files, "outer.rsp", t.path());
    REQUIRE(outer);
    CHECK(*outer == std::vector<std::string>{"-DX=1", "@inner.rsp", "-specs=my specs"});
    CHECK(*response_file_words_of(files, "opts.txt", t.path()) ==
          std::vector<std::string>{"-DZ=3"});
    CHECK(response_file_words_of(files, "my specs", t.path()) == nullptr);  // not a response file
    CHECK(response_file_words_of(files, "other.rsp", t.path()) == nullptr);
}

TEST_CASE("a response file that names itself is refused", "[flag_files]") {
    TempDir t;
    write_file(t / "loop.rsp", "@loop.rsp");
    CompileFlags f;
    f.cxx_flags = {"@loop.rsp"};
    std::string msg = bekc::test::fatal_message([&] { return read_flag_files(f, {}, t.path()); });
    CHECK(msg.find("nest more than 16 deep") != std::string::npos);
}

TEST_CASE("a flag naming no regular file is refused, naming the flag", "[flag_files]") {
    TempDir t;
    std::filesystem::create_directories(t / "profiles");
    CompileFlags f;
    f.cxx_flags = {"-fprofile-use=profiles"};
    CHECK(bekc::test::fatal_message([&] { return read_flag_files(f, {}, t.path()); }) ==
          "bekc: error: '-fprofile-use=profiles' makes the compiler read a file bekc must key: "
          "cannot read " +
              (t / "profiles").string() +
              ": it is a directory; name a regular file, or pass its flags directly");
    f.cxx_flags = {"@missing.rsp"};
    CHECK(bekc::test::fatal_message([&] {
              return read_flag_files(f, {}, t.path());
          }).find("missing.rsp") != std::string::npos);
}

TEST_CASE("a flag file changed after it was keyed is noticed", "[flag_files]") {
    TempDir t;
    write_file(t / "a.rsp", "-DA=1");
    CompileFlags f;
    f.cxx_flags = {"@a.rsp"};
    auto files = read_flag_files(f, {}, t.path()).value();
    CHECK_FALSE(flag_file_changed(files, std::numeric_limits<int64_t>::max()));
    write_file(t / "a.rsp", "-DA=2");
    CHECK(flag_file_changed(files, std::numeric_limits<int64_t>::max()) == (t / "a.rsp").string());
}

TEST_CASE("files named in nvcc's options from the environment are keyed, naming the variable",
          "[flag_files]") {
    TempDir t;
    write_file(t / "env.rsp", "-DE=1");
    NvccEnvFlags nvcc_env;
    nvcc_env.append = {"-Xcompiler=@env.rsp"};
    auto files = read_flag_files(CompileFlags{}, nvcc_env, t.path()).value();
    CHECK(paths_of(files, t) == std::vector<std::string>{"env.rsp"});
    nvcc_env.append.clear();
    nvcc_env.prepend = {"-optf", "missing.txt"};
    CHECK(bekc::test::fatal_message([&] {
              return read_flag_files(CompileFlags{}, nvcc_env, t.path());
          }).find("'$NVCC_PREPEND_FLAGS' -optf missing.txt'") != std::string::npos);
}

TEST_CASE("the files one command line makes its program read", "[flag_files]") {
    TempDir t;
    write_file(t / "host.rsp", "-finstrument-functions @more.rsp");
    write_file(t / "more.rsp", "-DM=1");
    write_file(t / "my.specs", "*cpp:\n");
    // A host compile as nvcc runs it with -Xcompiler=@host.rsp,-specs=my.specs.
    auto files = read_command_flag_files({"/usr/bin/g++", "-c", "-x", "c++", "@host.rsp",
                                          "-specs=my.specs", "x.cudafe1.cpp", "-o", "x.o"},
                                         t.path())
                     .value();
    CHECK(paths_of(files, t) == std::vector<std::string>{"host.rsp", "more.rsp", "my.specs"});
    CHECK(files[0].sha256 == sha256_hex("-finstrument-functions @more.rsp"));
    // The program itself is no flag.
    CHECK(read_command_flag_files({"@host.rsp"}, t.path()).value().empty());
    CHECK_FALSE(read_command_flag_files({"/usr/bin/g++", "@missing.rsp"}, t.path()));
}

TEST_CASE("files inside the lists a flag hands to another tool are keyed", "[flag_files]") {
    TempDir t;
    for (auto name : {"as.rsp", "as2.rsp", "pp.rsp", "ld.rsp", "nv.rsp", "host.specs"})
        write_file(t / name, "-DX=1");
    CompileFlags f;
    // The assembler's comma list, GCC's next-word forms, and nvcc's lists
    // holding the host compiler's own lists.
    f.cxx_flags = {"-Wa,-g,@as.rsp", "-Xassembler", "@as2.rsp", "-Xpreprocessor", "@pp.rsp"};
    f.cuda_flags = {"--compiler-options=-Wa,@nv.rsp", "-Xcompiler", "-specs=host.specs"};
    f.ldflags = {"-Xlinker", "@ld.rsp"};
    auto files = read_flag_files(f, {}, t.path()).value();
    CHECK(paths_of(files, t) == std::vector<std::string>{"as.rsp", "as2.rsp", "pp.rsp", "nv.rsp",
                                                         "host.specs", "ld.rsp"});
    // A step's command: the host compiler as nvcc runs it.
    auto step =
        read_command_flag_files({"/usr/bin/g++", "-c", "-Wa,--64,@as.rsp", "x.cpp"}, t.path())
            .value();
    CHECK(paths_of(step, t) == std::vector<std::string>{"as.rsp"});
    f.cxx_flags = {"-Wa,@missing.rsp"};
    CHECK(bekc::test::fatal_message([&] {
              return read_flag_files(f, {}, t.path());
          }).find("'-Wa,@missing.rsp' makes the compiler read a file") != std::string::npos);
    f.cxx_flags = {"-Xassembler", "@missing.rsp"};
    CHECK(bekc::test::fatal_message([&] {
              return read_flag_files(f, {}, t.path());
          }).find("'-Xassembler @missing.rsp' makes") != std::string::npos);
}
