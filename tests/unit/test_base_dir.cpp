// $BEKC_BASE_DIR's path rewriting (lib/store/base_dir).
#include <catch2/catch.hpp>

#include "store/base_dir.hpp"

using namespace bekc;

TEST_CASE("base dir: paths under it are written relative to it, and read back", "[base_dir]") {
    BaseDir b("/home/me/proj/");
    CHECK(b.dir() == "/home/me/proj");
    CHECK(b.hide("/home/me/proj/src/a.h") == "$BEKC_BASE_DIR/src/a.h");
    CHECK(b.hide("-I/home/me/proj/inc") == "-I$BEKC_BASE_DIR/inc");
    CHECK(b.hide("-ffile-prefix-map=/home/me/proj=.") == "-ffile-prefix-map=$BEKC_BASE_DIR=.");
    CHECK(b.hide("#include \"/home/me/proj/k.cu\"\n#line 3 \"/home/me/proj/k.cu\"") ==
          "#include \"$BEKC_BASE_DIR/k.cu\"\n#line 3 \"$BEKC_BASE_DIR/k.cu\"");
    CHECK(b.hide("/home/me/project2/a.h") == "/home/me/project2/a.h");  // not a boundary
    CHECK(b.hide("/usr/include/stdio.h") == "/usr/include/stdio.h");
    CHECK(b.show("$BEKC_BASE_DIR/src/a.h") == "/home/me/proj/src/a.h");
    CHECK(b.show("/usr/include/stdio.h") == "/usr/include/stdio.h");
    BaseDir none;
    CHECK(none.empty());
    CHECK(none.hide("/home/me/proj/a.h") == "/home/me/proj/a.h");
    CHECK_FALSE(none.show("$BEKC_BASE_DIR/a.h"));  // recorded under a base, none set
    CHECK(BaseDir("/").empty());
    CHECK(BaseDir("relative").empty());
}

TEST_CASE("base dir: only a whole leading path component is the base", "[base_dir]") {
    // With base /src, /usr/src/inc became /usr$BEKC_BASE_DIR/inc: a name that
    // never exists, checked (and named by --depfile) in every checkout.
    BaseDir b("/src");
    CHECK(b.hide("/usr/src/inc") == "/usr/src/inc");
    CHECK(b.hide("-I/usr/src/inc") == "-I/usr/src/inc");
    CHECK(b.hide("/usr/src/inc:/src/inc") == "/usr/src/inc:$BEKC_BASE_DIR/inc");
    CHECK(b.hide("-I/src/inc") == "-I$BEKC_BASE_DIR/inc");
    CHECK(b.hide("-isystem/src/inc") == "-isystem$BEKC_BASE_DIR/inc");
    CHECK(b.hide("--include=/src/a.h") == "--include=$BEKC_BASE_DIR/a.h");
    CHECK(b.hide("#line 1 \"/src/k.cu\"\n#include \"/x/src/k.h\"") ==
          "#line 1 \"$BEKC_BASE_DIR/k.cu\"\n#include \"/x/src/k.h\"");
    CHECK(b.hide("/src/src/a.h") == "$BEKC_BASE_DIR/src/a.h");
    CHECK(b.hide("a /src/b") == "a $BEKC_BASE_DIR/b");
}
