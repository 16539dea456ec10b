// GNU make's jobserver as bekc uses it (lib/run/jobserver): MAKEFLAGS read,
// tokens taken one at a time without waiting and given back, nothing
// followed that is not make's FIFO, and the one a package serves.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "../helpers/temp_dir.hpp"
#include "run/jobserver.hpp"
#include "run/parallel.hpp"
#include "util/fs.hpp"

using namespace bekc;
using namespace std::chrono_literals;

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

// make's pipe, holding `tokens`, and the MAKEFLAGS that names it.
struct MakePipe {
    int fds[2] = {-1, -1};
    explicit MakePipe(const std::string& tokens) {
        REQUIRE(::pipe(fds) == 0);
        REQUIRE(::write(fds[1], tokens.data(), tokens.size()) ==
                static_cast<ssize_t>(tokens.size()));
    }
    ~MakePipe() {
        ::close(fds[0]);
        ::close(fds[1]);
    }
    EnvLookup env() const {
        return makeflags("-j --jobserver-auth=" + std::to_string(fds[0]) + "," +
                         std::to_string(fds[1]));
    }
};

// Runs `n` short sleeps with `slots` (its tokens included); the most that
// ran at once. `also` sees every event too.
int most_at_once(JobSlots& slots, size_t n, const ProgressCallback& also = {}) {
    std::vector<Command> cmds(n, Command{{"/bin/sleep", "0.4"}, "", {}, {}, "", {}});
    ParallelOptions po;
    po.tokens = &slots;
    int active = 0, most = 0;
    auto results = run_parallel(
        cmds, slots.count(),
        [&](const ProgressEvent& e) {
            active += e.kind == ProgressEvent::Kind::Started ? 1 : -1;
            most = std::max(most, active);
            if (also) also(e);
        },
        po);
    for (const auto& r : results) CHECK(r.ok());
    return most;
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
    JobSlots six = JobSlots::take(6, makeflags("-j4"));
    CHECK(six.count() == 6);
    CHECK_FALSE(six.from_jobserver());
    CHECK_FALSE(six.try_take());
    CHECK(JobSlots::take(0, [](std::string_view) { return std::nullopt; }).count() == 1);
}

TEST_CASE(
    "jobserver: tokens from make's pipe are taken one at a time, never waited for, and "
    "returned",
    "[jobserver]") {
    MakePipe make("abc");  // make has three free tokens
    auto env = make.env();
    {
        JobSlots first = JobSlots::take(3, env);
        CHECK(first.from_jobserver());
        CHECK(first.count() == 1);  // the implicit slot only: nothing is taken up front
        JobSlots second = JobSlots::take(8, env);
        CHECK(first.try_take());
        CHECK(second.try_take());
        CHECK(second.try_take());
        CHECK_FALSE(first.try_take());  // none left: no waiting
        CHECK(first.tokens_held() == 1);
        CHECK(second.tokens_held() == 2);
        second.give_back();  // as soon as it is done with one, another build may take it
        CHECK(first.try_take());
        CHECK(first.tokens_held() == 2);
    }
    // Every token went back, byte for byte.
    std::string back = drain(make.fds[0]);
    std::sort(back.begin(), back.end());
    CHECK(back == "abc");
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
        CHECK(s.try_take());
        CHECK(s.try_take());
        CHECK_FALSE(s.try_take());
    }
    CHECK(drain(hold) == "++");

    fs::path link = tmp / "link";
    fs::create_symlink(fifo, link);
    REQUIRE(::write(hold, "+", 1) == 1);
    JobSlots through_link = JobSlots::take(4, makeflags("--jobserver-auth=fifo:" + link.string()));
    CHECK_FALSE(through_link.from_jobserver());
    CHECK(through_link.count() == 1);
    CHECK_FALSE(through_link.try_take());
    CHECK(drain(hold) == "+");  // untouched
    ::close(hold);
}

TEST_CASE("jobserver: descriptors make did not pass mean one slot", "[jobserver]") {
    // A recipe make does not treat as a sub-make gets the flags but not the
    // descriptors: bekc then runs one command at a time, as make expects.
    JobSlots s = JobSlots::take(8, makeflags("--jobserver-auth=900,901"));
    CHECK(s.count() == 1);
    CHECK_FALSE(s.try_take());
    CHECK(s.refusal() == "make's jobserver is not used: descriptors 900,901 are not open");
}

TEST_CASE("jobserver: descriptors that are not the two ends of one pipe are not a jobserver",
          "[jobserver]") {
    // Two pipes, as a shell's stdin and stdout are: neither is read from
    // nor written to, and -v can say why.
    MakePipe in("++"), out("");
    auto flags = [](int r, int w) {
        return makeflags("-j --jobserver-auth=" + std::to_string(r) + "," + std::to_string(w));
    };
    {
        JobSlots s = JobSlots::take(8, flags(in.fds[0], out.fds[1]));
        CHECK_FALSE(s.from_jobserver());
        CHECK(s.count() == 1);
        CHECK_FALSE(s.try_take());
        CHECK(s.refusal().find("not the two ends of one pipe") != std::string::npos);
    }
    CHECK(drain(in.fds[0]) == "++");
    CHECK(drain(out.fds[0]).empty());
    // One pipe, but the ends swapped or both the same: make hands out its
    // read end readable and its write end writable.
    MakePipe make("+");
    for (auto [r, w] : {std::pair{make.fds[1], make.fds[0]}, std::pair{make.fds[1], make.fds[1]},
                        std::pair{make.fds[0], make.fds[0]}}) {
        JobSlots s = JobSlots::take(8, flags(r, w));
        CHECK_FALSE(s.from_jobserver());
        CHECK_FALSE(s.try_take());
        CHECK_FALSE(s.refusal().empty());
    }
    CHECK(drain(make.fds[0]) == "+");
    // A regular file in place of a descriptor.
    test::TempDir tmp;
    int file = ::open((tmp / "f").c_str(), O_RDWR | O_CREAT, 0600);
    REQUIRE(file >= 0);
    REQUIRE(::write(file, "++", 2) == 2);
    JobSlots on_file = JobSlots::take(8, flags(file, file));
    CHECK_FALSE(on_file.from_jobserver());
    CHECK(on_file.refusal().find("not a pipe") != std::string::npos);
    ::close(file);
    // make's own pipe is still taken, with nothing to say.
    JobSlots good = JobSlots::take(8, make.env());
    CHECK(good.from_jobserver());
    CHECK(good.refusal().empty());
}

TEST_CASE("jobserver: a fifo: path that is not a FIFO is neither opened nor used", "[jobserver]") {
    test::TempDir tmp;
    const fs::path file = tmp / "tokens";
    test::write_file(file, "+++");
    JobSlots on_file = JobSlots::take(4, makeflags("--jobserver-auth=fifo:" + file.string()));
    CHECK_FALSE(on_file.from_jobserver());
    CHECK(on_file.count() == 1);
    CHECK_FALSE(on_file.try_take());
    CHECK(on_file.refusal().find("not a FIFO") != std::string::npos);
    CHECK(test::read_file(file) == "+++");
    JobSlots missing =
        JobSlots::take(4, makeflags("--jobserver-auth=fifo:" + (tmp / "none").string()));
    CHECK_FALSE(missing.from_jobserver());
    CHECK(missing.refusal().find("No such file") != std::string::npos);
}

TEST_CASE(
    "jobserver: a package serves one of its own, which its children reach and which goes "
    "away with it",
    "[jobserver]") {
    test::TempDir tmp;
    fs::path fifo;
    {
        // -j 3, of which two slots are tokens (the package starts its first
        // child in the third).
        auto served = JobSlots::serve(3, 2, {std::nullopt, std::nullopt, tmp / "fallback"});
        REQUIRE(served);
        CHECK(served->count() == 1);
        const std::string flags = served->makeflags();
        REQUIRE(flags.rfind("-j3 --jobserver-auth=fifo:", 0) == 0);
        fifo = flags.substr(flags.find("fifo:") + 5);
        struct stat st;
        REQUIRE(::lstat(fifo.c_str(), &st) == 0);
        CHECK(S_ISFIFO(st.st_mode));
        CHECK((st.st_mode & 077) == 0);
        // A child, through its MAKEFLAGS: the two tokens, and no third.
        JobSlots child = JobSlots::take(8, makeflags(flags));
        CHECK(child.try_take());
        CHECK(child.try_take());
        CHECK_FALSE(child.try_take());
        CHECK_FALSE(served->try_take());
        child.give_back();
        CHECK(served->try_take());  // the package starts another module in it
    }
    CHECK_FALSE(fs::exists(fifo.parent_path()));
}

TEST_CASE(
    "jobserver: run_parallel takes a token for each command beyond its slots and gives "
    "every one back",
    "[jobserver][process]") {
    MakePipe make("++");
    JobSlots slots = JobSlots::take(8, make.env());
    CHECK(most_at_once(slots, 6) == 3);  // the implicit slot and make's two tokens
    CHECK(slots.tokens_held() == 0);
    CHECK(drain(make.fds[0]) == "++");
}

TEST_CASE("jobserver: a token given back while commands run is taken for the next one",
          "[jobserver][process]") {
    // Another recipe holds make's only token at first and gives it back
    // while this build's first command runs: the build takes it then for
    // its second, instead of waiting for its first to end as a build that
    // counted its tokens at the start would.
    MakePipe make("");
    JobSlots slots = JobSlots::take(8, make.env());
    std::atomic<bool> started = false;
    std::jthread other([&] {
        while (!started) std::this_thread::sleep_for(5ms);
        std::this_thread::sleep_for(50ms);
        CHECK(::write(make.fds[1], "+", 1) == 1);
    });
    CHECK(most_at_once(slots, 2, [&](const ProgressEvent&) { started = true; }) == 2);
    other.join();
    CHECK(slots.tokens_held() == 0);
    CHECK(drain(make.fds[0]) == "+");
}
