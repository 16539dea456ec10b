#include "commands.hpp"

int main(int argc, char** argv) {
    return bekc::cli::run(argc, argv);
}
