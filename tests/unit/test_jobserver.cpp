// GNU make's jobserver as bekc uses it (lib/run/jobserver): MAKEFLAGS read,
// tokens taken without waiting and given back, nothing followed that is not
// make's FIFO.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "../helpers/temp_dir.hpp"
#include "run/jobserver.hpp"
#include "util/fs.hpp"

using namespace bekc;

namespace {

EnvLookup makeflags(const std::string& value) {
    return [value](std::string_view name) -> std::optional<std::string> {
        if (name == "MAKEFLAGS") return value;
        return std::nullopt;
    };
}

std::string drain(int fd) {
    std::string out;
    char c;
    int flags = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    while (::read(fd, &c, 1) == 1) out += c;
    ::fcntl(fd, F_SETFL, flags);
    return out;
}

}  // namespace

TEST_CASE("jobserver: MAKEFLAGS forms", "[jobserver]") {
    auto fifo = parse_makeflags("-j8 --jobserver-auth=fifo:/tmp/GMfifo1234");
    REQUIRE(fifo);
    CHECK(fifo->fifo == "/tmp/GMfifo1234");
    auto fds = parse_makeflags("kr -j4 --jobserver-auth=3,4");
    REQUIRE(fds);
    CHECK(fds->fifo.empty());
    CHECK(fds->read_fd == 3);
    CHECK(fds->write_fd == 4);
    auto old = parse_makeflags(" --jobserver-fds=5,6 -j");
    REQUIRE(old);
    CHECK(old->read_fd == 5);
    // The last one counts, as in make.
    auto last = parse_makeflags("--jobserver-auth=3,4 --jobserver-auth=fifo:/x");
    REQUIRE(last);
    CHECK(last->fifo == "/x");
    CHECK_FALSE(parse_makeflags("-j4"));
    CHECK_FALSE(parse_makeflags("--jobserver-auth=3"));
    CHECK_FALSE(parse_makeflags("--jobserver-auth=a,b"));
    CHECK_FALSE(parse_makeflags("--jobserver-auth=fifo:"));
    CHECK_FALSE(parse_makeflags(""));
}

TEST_CASE("jobserver: without one, -j is the budget", "[jobserver]") {
    CHECK(JobSlots::take(6, makeflags("-j4")).count() == 6);
    CHECK(JobSlots::take(0, [](std::string_view) { return std::nullopt; }).count() == 1);
}

TEST_CASE("jobserver: tokens from make's pipe are taken, never waited for, and returned",
          "[jobserver]") {
    int p[2];
    REQUIRE(::pipe(p) == 0);
    REQUIRE(::write(p[1], "abc", 3) == 3);  // make has three free tokens
    auto env =
        makeflags("-j4 --jobserver-auth=" + std::to_string(p[0]) + "," + std::to_string(p[1]));
    {
        JobSlots few = JobSlots::take(3, env);
        CHECK(few.count() == 3);  // the implicit slot and two tokens
        CHECK(few.from_jobserver());
        JobSlots rest = JobSlots::take(8, env);
        CHECK(rest.count() == 2);  // the one token left, taken at once
        JobSlots none = JobSlots::take(8, env);
        CHECK(none.count() == 1);  // nothing free: the implicit slot, no waiting
    }
    // Every token went back, byte for byte.
    std::string back = drain(p[0]);
    std::sort(back.begin(), back.end());
    CHECK(back == "abc");
    ::close(p[0]);
    ::close(p[1]);
}

TEST_CASE("jobserver: make's FIFO (make 4.4), and no link in its place", "[jobserver]") {
    test::TempDir tmp;
    fs::path fifo = tmp / "GMfifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    int hold = ::open(fifo.c_str(), O_RDWR);  // make keeps it open
    REQUIRE(hold >= 0);
    REQUIRE(::write(hold, "++", 2) == 2);
    {
        JobSlots s = JobSlots::take(4, makeflags("-j3 --jobserver-auth=fifo:" + fifo.string()));
        CHECK(s.count() == 3);
    }
    CHECK(drain(hold) == "++");

    fs::path link = tmp / "link";
    fs::create_symlink(fifo, link);
    REQUIRE(::write(hold, "+", 1) == 1);
    CHECK(JobSlots::take(4, makeflags("--jobserver-auth=fifo:" + link.string())).count() == 1);
    CHECK(drain(hold) == "+");  // untouched
    ::close(hold);
}

TEST_CASE("jobserver: descriptors make did not pass mean one slot", "[jobserver]") {
    // A recipe make does not treat as a sub-make gets the flags but not the
    // descriptors: bekc then runs one command at a time, as make expects.
    CHECK(JobSlots::take(8, makeflags("--jobserver-auth=900,901")).count() == 1);
}
