// plan/include_flags: the include directories that compile flags add, as the
// host compiler and nvcc read them.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "plan/include_flags.hpp"

using namespace bekc;
using Words = std::vector<std::string>;

TEST_CASE("include flags: each host option in each spelling, in its chain and in order",
          "[include_flags]") {
    IncludeFlagDirs d = host_include_dirs({"-I",
                                           "a1",
                                           "-Ia2",
                                           "-iquote",
                                           "q1",
                                           "-iquoteq2",
                                           "-isystem",
                                           "s1",
                                           "-isystems2",
                                           "-idirafter",
                                           "d1",
                                           "-idirafterd2",
                                           "--include-directory",
                                           "a3",
                                           "--include-directory=a4",
                                           "--include-directory-after=d3",
                                           "--include-directory-after",
                                           "d4",
                                           "-I=a5",
                                           "-isystem=/s3",
                                           "-O2",
                                           "-DX=-Inot",
                                           "-Wp,-Ia6,-iquote,q3",
                                           "-Xpreprocessor",
                                           "-Ia7"});
    CHECK(d.angled == Words{"a1", "a2", "a3", "a4", "a5", "a6", "a7"});
    CHECK(d.quote == Words{"q1", "q2", "q3"});
    CHECK(d.system == Words{"s1", "s2", "/s3"});
    CHECK(d.after == Words{"d1", "d2", "d3", "d4"});
}

TEST_CASE("include flags: other options' values are not include directories", "[include_flags]") {
    // ld's -I names its dynamic linker; -D's value is a macro.
    CHECK(host_include_dirs({"-Xlinker", "-I/lib/ld.so", "-D", "-Ix", "-I-", "-I"}).empty());
    NvccIncludeDirs n = nvcc_include_dirs({"-Xlinker", "-I/lib/ld.so", "-ccbin", "-Ix"});
    CHECK(n.angled.empty());
    CHECK(n.host.empty());
}

TEST_CASE("include flags: nvcc's own spellings and lists, and the host compiler's after -Xcompiler",
          "[include_flags]") {
    NvccIncludeDirs n = nvcc_include_dirs({"-I",
                                           "a1",
                                           "-Ia2,a3",
                                           "-I=a4",
                                           "--include-path",
                                           "a5",
                                           "--include-path=a6,a7",
                                           "-isystem",
                                           "s1",
                                           "-isystem=s2,s3",
                                           "--system-include",
                                           "s4",
                                           "--system-include=s5",
                                           "-Xcompiler",
                                           "-Ih1,-iquote,q1",
                                           "-Xcompiler=-isystem hs1",
                                           "--compiler-options",
                                           "-idirafter",
                                           "--compiler-options",
                                           "hd1",
                                           "--compiler-options=-I,h2",
                                           "-lineinfo"});
    CHECK(n.angled == Words{"a1", "a2", "a3", "a4", "a5", "a6", "a7"});
    CHECK(n.system == Words{"s1", "s2", "s3", "s4", "s5"});
    // nvcc joins the -Xcompiler words with spaces: "-idirafter" and "hd1"
    // from two options are one option and its value to the host compiler.
    CHECK(n.host.angled == Words{"h1", "h2"});
    CHECK(n.host.quote == Words{"q1"});
    CHECK(n.host.system == Words{"hs1"});
    CHECK(n.host.after == Words{"hd1"});
}

namespace {

// Response files by name, as read_flag_files would have read them.
ResponseFileWords files_of(const std::map<std::string, Words>& files) {
    return [&files](std::string_view name) -> const Words* {
        auto it = files.find(std::string(name));
        return it == files.end() ? nullptr : &it->second;
    };
}

}  // namespace

TEST_CASE("include flags: response files stand for their words, nested ones too",
          "[include_flags]") {
    const std::map<std::string, Words> files = {
        {"outer.rsp", {"-Ir1", "@inner.rsp", "-iquote", "q1"}},
        {"inner.rsp", {"-isystem", "s1", "-Wp,@pp.rsp"}},
        {"pp.rsp", {"-idirafter", "d1"}},
        {"loop.rsp", {"-Iloop", "@loop.rsp"}},
    };
    IncludeFlagDirs d =
        host_include_dirs({"-Ia0", "@outer.rsp", "-Ia1", "@unread.rsp"}, files_of(files));
    CHECK(d.angled == Words{"a0", "r1", "a1"});
    CHECK(d.quote == Words{"q1"});
    CHECK(d.system == Words{"s1"});
    CHECK(d.after == Words{"d1"});
    // A loop stops at the nesting limit, as the files' reading refuses it.
    CHECK(host_include_dirs({"@loop.rsp"}, files_of(files)).angled.size() == 17);
    // Without the files' words, no directory is read from them.
    CHECK(host_include_dirs({"@outer.rsp"}).empty());
}

TEST_CASE("include flags: nvcc's options files, and the host compiler's @files",
          "[include_flags]") {
    const std::map<std::string, Words> files = {
        {"o1.txt", {"-Io1", "--options-file", "o2.txt"}},
        {"o2.txt", {"-isystem=os2", "-Xcompiler", "@h.rsp"}},
        {"o3.txt", {"-Io3"}},
        {"at.rsp", {"-Iat"}},
        {"h.rsp", {"-iquote", "hq"}},
    };
    NvccIncludeDirs n = nvcc_include_dirs(
        {"--options-file=o1.txt", "-optf", "o3.txt", "-optf=missing.txt", "@at.rsp", "-Ilast"},
        files_of(files));
    // nvcc reads no @FILE of its own.
    CHECK(n.angled == Words{"o1", "o3", "last"});
    CHECK(n.system == Words{"os2"});
    CHECK(n.host.quote == Words{"hq"});
}

TEST_CASE("include flags: -iwithprefix and -iwithprefixbefore after -iprefix", "[include_flags]") {
    IncludeFlagDirs d = host_include_dirs(
        {"-iwithprefix", "ignored", "-iprefix", "/p/", "-iwithprefix", "w1", "-iwithprefixw2",
         "-iwithprefixbefore", "b1", "-iprefix/q", "-iwithprefixbeforeb2", "-Wp,-iwithprefix,w3"});
    CHECK(d.system == Words{"/p/w1", "/p/w2", "/qw3"});
    CHECK(d.angled == Words{"/p/b1", "/qb2"});
}
