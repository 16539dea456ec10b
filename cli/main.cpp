#include <unistd.h>

#include <cstdio>

#include "commands.hpp"

int main(int argc, char** argv) {
    // Standard output is written once, at exit, where check_stdout reports a
    // failed write with its cause (a full disk): a buffer smaller than what a
    // command prints (`bekc build --help` is over 4 KiB, /dev/full's block
    // size) would fail inside an earlier write, whose error number is lost.
    // A terminal keeps its line buffering.
    static char buffer[1 << 16];
    if (!::isatty(STDOUT_FILENO)) std::setvbuf(stdout, buffer, _IOFBF, sizeof buffer);
    return bekc::cli::run(argc, argv);
}
