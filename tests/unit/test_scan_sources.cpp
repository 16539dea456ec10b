// The two scans of other people's text: the `#include` lines of a kernel
// source (scan/includes) and the kernel loads of a Python package
// (scan/python_loads, and what a load's path argument names: scan/python_path).
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>

#include "scan/includes.hpp"
#include "scan/python_loads.hpp"
#include "scan/python_path.hpp"

using namespace bekc;

TEST_CASE("find_includes: quoted and angled, with their lines and columns", "[includes]") {
    auto incs = find_includes(
        "// header\n#include <cstdio>\n  #  include \"xla/ffi/api/ffi.h\"\n#if 0\n#include "
        "\"brainevent/dtypes.h\"\n#endif\n",
        "k.cu");
    REQUIRE(incs.size() == 3);
    CHECK(incs[0].header == "cstdio");
    CHECK(incs[0].angled);
    CHECK(incs[0].where.line == 2);
    CHECK(incs[1].header == "xla/ffi/api/ffi.h");
    CHECK_FALSE(incs[1].angled);
    CHECK(incs[1].where.line == 3);
    CHECK(incs[1].where.column == 3);
    CHECK(incs[1].where.file == "k.cu");
    // Inside #if 0 still counts: what the preprocessor will take is not known here.
    CHECK(incs[2].header == "brainevent/dtypes.h");
}

TEST_CASE("find_includes: comments and other directives are not includes", "[includes]") {
    auto incs = find_includes(
        "/* #include \"a.h\"\n#include \"b.h\" */\n// #include \"c.h\"\n#define X "
        "#include\n#include\n#include \"\"\nint x; /* open\n*/ #include \"d.h\"\n",
        "k.cu");
    REQUIRE(incs.empty());
}

TEST_CASE("find_includes: CRLF line ends and a last line without one", "[includes]") {
    auto incs = find_includes("#include \"a.h\"\r\n#include <b.h>", "k.cpp");
    REQUIRE(incs.size() == 2);
    CHECK(incs[0].header == "a.h");
    CHECK(incs[1].header == "b.h");
    CHECK(incs[1].where.line == 2);
}

TEST_CASE("find_kernel_loads: the literal path and name of each call", "[python_loads]") {
    auto loads = find_kernel_loads(
        "from x import load_cuda_file\n"
        "def load_cuda_file(path, name=None):\n    pass\n"
        "load_cuda_file(Path(__file__).parent.joinpath('csr.cu'), name='jit_csr')\n"
        "m = load_cuda_file(\n    Path(__file__).resolve().parent / \"_csr\" / \"a.cu\",\n"
        "    name=\"csr_to_csc\",  # a comment (with a paren\n    allow_cuda_graph=False,\n)\n");
    REQUIRE(loads.size() == 2);
    CHECK(loads[0].function == "load_cuda_file");
    CHECK(loads[0].path_parts == std::vector<std::string>{"csr.cu"});
    CHECK(loads[0].name == "jit_csr");
    CHECK(loads[0].positional == 1);
    CHECK(loads[0].line == 4);
    CHECK(loads[1].path_parts == std::vector<std::string>{"_csr", "a.cu"});
    CHECK(loads[1].name == "csr_to_csc");
    CHECK(loads[1].keywords == std::vector<std::string>{"name", "allow_cuda_graph"});
    CHECK(loads[1].line == 5);
}

TEST_CASE("find_kernel_loads: computed names and extra arguments are visible", "[python_loads]") {
    auto loads = find_kernel_loads(
        "load_cuda_file(p.joinpath('h.cu'), name=_mod, extra_cuda_cflags=flags(cfg))\n"
        "load_cuda_file(p.joinpath('f.cu'), name=f'x_{n}')\n"
        "load_cpp_file('k.cpp', {'f': ['arg']}, name='k' + s)\n"
        "x.load_cuda_file(p.joinpath('g.cu'), name='g', extra_ldflags=[str(lib)])\n");
    REQUIRE(loads.size() == 4);
    CHECK(loads[0].name.empty());
    CHECK(loads[0].keywords == std::vector<std::string>{"name", "extra_cuda_cflags"});
    CHECK(loads[1].name.empty());  // an f-string is not a literal
    CHECK(loads[2].name == "g");
    CHECK(loads[2].keywords == std::vector<std::string>{"name", "extra_ldflags"});
    // load_cpp_file calls come after every load_cuda_file call.
    CHECK(loads[3].function == "load_cpp_file");
    CHECK(loads[3].positional == 2);
    CHECK(loads[3].name.empty());
    CHECK(loads[3].line == 3);
}

TEST_CASE("find_kernel_loads: keyword values that are string literals, or lists of them",
          "[python_loads]") {
    auto loads = find_kernel_loads(
        "load_cpp_file('k.cpp', a=['-DA=1', \"-DB\"], b=('-lm',), c='one', d=[], e=None,\n"
        "    f = [  # a comment\n  'x',\n  'y',\n], g=(r'-DR', u'-DU'))\n"
        "load_cpp_file('k.cpp', a=[f'-D{x}'], b=['a' 'b'], c=['a', b], d=['a'] + more,\n"
        "    e=[r'\\d'], f=b'x', g=[['a']], h=('a'), i=x, j=['a',,])\n");
    REQUIRE(loads.size() == 2);
    using List = std::vector<std::string>;
    const auto& lists = loads[0].string_lists;
    CHECK(lists.at("a") == List{"-DA=1", "-DB"});
    CHECK(lists.at("b") == List{"-lm"});
    CHECK(lists.at("c") == List{"one"});
    CHECK(lists.at("d").empty());
    CHECK(lists.at("e").empty());  // None: no flags
    CHECK(lists.at("f") == List{"x", "y"});
    CHECK(lists.at("g") == List{"-DR", "-DU"});
    // Anything computed, concatenated, escaped or nested is not a literal
    // list; a parenthesised literal is the literal.
    CHECK(loads[1].string_lists == std::map<std::string, List>{{"h", List{"a"}}});
}

TEST_CASE("find_kernel_loads: the path argument as written", "[python_loads]") {
    auto loads = find_kernel_loads(
        "load_cuda_file(Path(__file__).with_suffix(\".cu\"), name=\"tcsr_dt2t\")\n"
        "load_cuda_file(\n    Path(__file__).with_name('a.cu'),  # the kernel\n    name='a')\n"
        "load_cuda_file(name='k', filepath=p)\n");
    REQUIRE(loads.size() == 3);
    CHECK(loads[0].path_text == "Path(__file__).with_suffix(\".cu\")");
    CHECK(loads[1].path_text == "\n    Path(__file__).with_name('a.cu')");
    CHECK(loads[2].path_text.empty());  // no positional path
}

TEST_CASE("evaluate_load_path: pathlib's forms from the .py file", "[python_path]") {
    const std::string py = "/site/brainevent/_tcsr/dt2t.py";
    auto eval = [&](const char* text) { return evaluate_load_path(text, py); };
    CHECK(eval("Path(__file__).with_suffix(\".cu\")") == "/site/brainevent/_tcsr/dt2t.cu");
    CHECK(eval("Path(__file__).with_name(\"bpsa_mm.cu\")") == "/site/brainevent/_tcsr/bpsa_mm.cu");
    CHECK(eval("Path(__file__).parent.joinpath('csr.cu')") == "/site/brainevent/_tcsr/csr.cu");
    CHECK(eval("pathlib.Path(__file__).resolve().parent / \"_csr\" / \"csr_to_csc.cu\"") ==
          "/site/brainevent/_tcsr/_csr/csr_to_csc.cu");
    CHECK(eval("Path(__file__).parent.parent.joinpath('_csr', 'a.cu',)") ==
          "/site/brainevent/_csr/a.cu");
    CHECK(eval("(Path(__file__).parent  # where\n / r'sub/b.cu')") ==
          "/site/brainevent/_tcsr/sub/b.cu");
    CHECK(eval("Path(__file__).parent.joinpath('a' '.cu')") == "/site/brainevent/_tcsr/a.cu");
    // pathlib's suffix rule: only the last suffix is replaced.
    CHECK(evaluate_load_path("Path(__file__).with_suffix('.cu')", "d/k.tar.py") == "d/k.tar.cu");
    CHECK(evaluate_load_path("Path(__file__).with_suffix('.cu')", "d/.hidden") == "d/.hidden.cu");
    // Not understood: the file is unknown.
    for (const char* text :
         {"tile_mm_dir.joinpath('binary_csrmm_tile.cu')",
          "Path(__file__).parent.joinpath('a.cu' if x else 'b.cu')",
          "Path(__file__).parent / f'{n}.cu'", "Path(__file__).parent / '/etc/x'",
          "Path(__file__).parent / ''", "Path(__file__).with_suffix('cu')",
          "Path(__file__).with_name('a/b.cu')", "Path('x.cu')",
          "Path(__file__).parent.joinpath('a\\\\b.cu')", "Path(__file__",
          "Path(__file__).parent.glob('*.cu')", ""})
        CHECK_FALSE(eval(text));
}

TEST_CASE("path_stem: brainevent's default module name", "[python_path]") {
    CHECK(path_stem("/a/_tcsr/dt2t.cu") == "dt2t");
    CHECK(path_stem("k.tar.cu") == "k.tar");
    CHECK(path_stem(".hidden") == ".hidden");
    CHECK(path_stem("a/b") == "b");
}

TEST_CASE("find_kernel_loads: a load named in a comment or a string is not a call",
          "[python_loads]") {
    auto loads = find_kernel_loads(
        "# load_cuda_file('old.cu', name='old')\n"
        "\"\"\"Use load_cuda_file('doc.cu', name='doc') like this: load_cuda_file(\n\"\"\"\n"
        "s = 'load_cuda_file(\"str.cu\")'\n"
        "m = load_cuda_file('real.cu', name='real')\n");
    REQUIRE(loads.size() == 1);
    CHECK(loads[0].path_parts == std::vector<std::string>{"real.cu"});
    CHECK(loads[0].name == "real");
    CHECK(loads[0].line == 5);
}

TEST_CASE("find_kernel_loads: a call never closed is skipped, the calls inside it are found",
          "[python_loads]") {
    auto loads = find_kernel_loads(
        "a = load_cuda_file('open.cu', name='open'\n"
        "b = load_cuda_file('b.cu', name='b')\n");
    REQUIRE(loads.size() == 1);
    CHECK(loads[0].name == "b");
    CHECK(loads[0].line == 2);
}

namespace {

double seconds_to_scan(const std::string& text) {
    auto start = std::chrono::steady_clock::now();
    (void)find_kernel_loads(text);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string repeated(std::string_view piece, size_t bytes) {
    std::string out;
    while (out.size() < bytes) out += piece;
    return out;
}

}  // namespace

TEST_CASE("find_kernel_loads: linear in the file's size, whatever the calls' nesting",
          "[python_loads]") {
    // Each of these took quadratic time: every call was parsed to its end,
    // and an unclosed one to the end of the file (a 1 MB file: over 30 s).
    const std::string unclosed = repeated("load_cuda_file(\n", 1 << 20);
    const std::string nested =
        repeated("load_cuda_file('a.cu', ", 1 << 19) + repeated(")", 1 << 19);
    const std::string strings = repeated("load_cpp_file('x', \"y\", [", 1 << 20);
    for (const auto* text : {&unclosed, &nested, &strings}) {
        double one = seconds_to_scan(*text);
        CHECK(one < 5.0);
        // Four times the text: about four times the time, not sixteen.
        double four = seconds_to_scan(*text + *text + *text + *text);
        CHECK(four < 5.0);
        CHECK(four < 12 * one + 0.05);
    }
    auto loads = find_kernel_loads(nested);
    CHECK(loads.size() == 1);  // the outermost; the calls inside its arguments are not loads
}
