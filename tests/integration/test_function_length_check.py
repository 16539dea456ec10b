"""scripts/check_function_length.py: the test command's limit of 80 lines per
function in lib/ (docs/ARCHITECTURE.md, "The phases of a build").

The check names each function over the limit at its first line and fails;
what is not a function (classes, namespaces, initializers, lambdas and
braces in strings or comments) is never counted as one.
"""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "check_function_length.py"


def check(*args, cwd=None):
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=60)


def function(name, body_lines, head="void {name}(int a, int b) {{"):
    """A function of 2 + body_lines lines: its head, the body, its brace."""
    return "\n".join([head.format(name=name)] + ["    a += b;"] * body_lines + ["}"]) + "\n"


def test_a_function_over_the_limit_is_named_at_its_first_line(tmp_path):
    src = tmp_path / "lib" / "long.cpp"
    src.parent.mkdir()
    src.write_text("#include <x>\n\nnamespace bekc {\n\n" + function("fits", 78) + "\n" +
                   function("too_long", 79) + "}  // namespace bekc\n")
    r = check("--max", "80", tmp_path / "lib")
    assert r.returncode == 1
    assert r.stdout == (f"{src}:86: too_long is 81 lines (at most 80)\n"
                        "1 function(s) over 80 lines: split them into named helpers\n")


def test_members_constructors_and_signatures_over_several_lines_count(tmp_path):
    src = tmp_path / "members.hpp"
    src.write_text(
        "class Store {\n"
        "  public:\n"
        "    explicit Store(int a) : a_(a), b_{a} {\n" + "        a_ += 1;\n" * 3 + "    }\n"
        "    std::optional<int>\n"
        "    lookup(int key,\n"
        "           int other) const noexcept -> int {\n" + "        a_ += 1;\n" * 3 + "    }\n"
        "    Store& operator=(const Store& o) {\n" + "        a_ += 1;\n" * 3 + "    }\n"
        "    template <typename T = int>\n"
        "    void put(T value, int times = 2) {\n" + "        a_ += 1;\n" * 2 + "    }\n"
        "  private:\n"
        "    int a_ = 0, b_{0};\n"
        "};\n")
    r = check("--max", "4", src)
    assert r.returncode == 1
    assert r.stdout.splitlines()[:4] == [
        f"{src}:3: Store is 5 lines (at most 4)",
        f"{src}:8: lookup is 7 lines (at most 4)",
        f"{src}:15: operator= is 5 lines (at most 4)",
        f"{src}:20: put is 5 lines (at most 4)",
    ]


def test_braces_in_strings_comments_and_lambdas_do_not_end_a_function(tmp_path):
    src = tmp_path / "tricky.cpp"
    src.write_text(
        "int tricky(int n) {\n"
        "    // } a comment's brace\n"
        "    const char* s = \"}\";  /* } */\n"
        "    char c = '}';\n"
        "    auto f = [&](int k) { return k + 1'000; };\n"
        "    const char* raw = R\"x(})x\";\n"
        "    struct Local {\n"
        "        void g() {}\n"
        "    };\n"
        "    return f(n);\n"
        "}\n"
        "namespace {\n"
        "const int kTable[] = {\n1,\n2,\n3,\n4,\n5,\n};\n"
        "struct Big {\n" + "    int x;\n" * 20 + "};\n"
        "}  // namespace\n")
    r = check("--max", "10", src)
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        f"{src}:1: tricky is 11 lines (at most 10)",
        "1 function(s) over 10 lines: split them into named helpers",
    ]
    assert check("--max", "11", src).returncode == 0

