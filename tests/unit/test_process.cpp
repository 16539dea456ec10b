#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <sstream>

#include "../helpers/temp_dir.hpp"
#include "run/execute.hpp"
#include "run/interrupt.hpp"
#include "run/parallel.hpp"
#include "run/process.hpp"
#include "run/runner.hpp"
#include "util/fs.hpp"

using namespace bekc;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

Command cmd(std::vector<std::string> argv) {
    return Command{std::move(argv), "", {}, {}, "", {}};
}

// A graph executed by real processes within -j 2, and the steps that
// succeeded, in the order they finished.
struct GraphRun {
    std::vector<std::string> finished;

    std::expected<void, StepFailure> execute(const BuildGraph& g) {
        ProcessRunner runner;
        ExecuteOptions eo;
        eo.jobs = 2;
        eo.finished = [&](const Step& s, const ProcessResult&) {
            finished.push_back(s.command.description);
        };
        return execute_graph(g, runner, eo);
    }
};

const std::vector<std::string> kNastyArgs = {
    "plain",     "with space",  "it's",         "\"double\"", "$HOME",         "*",
    "?",         "a;b",         "a|b",          "$(id)",      "`id`",          "line1\nline2",
    "tab\there", "back\\slash", "ünïcödé ✓ 核", "",           "--flag=va lue", "-",
    "'",         "\\'",
};

}  // namespace

TEST_CASE("a program's output and exit code come back", "[process]") {
    ProcessResult r = run_process(cmd({"/bin/echo", "hello", "world"}));
    CHECK(r.status == ProcessStatus::Exited);
    CHECK(r.exit_code == 0);
    CHECK(r.ok());
    CHECK(r.output == "hello world\n");
    CHECK(r.wall_time > 0ns);
}

TEST_CASE("a bare program name is found through PATH", "[process]") {
    ProcessResult r = run_process(cmd({"printf", "%s-%s", "a", "b"}));
    CHECK(r.ok());
    CHECK(r.output == "a-b");
}

TEST_CASE("arguments reach the program byte for byte", "[process]") {
    std::vector<std::string> argv = {"/usr/bin/printf", "%s\\0"};
    argv.insert(argv.end(), kNastyArgs.begin(), kNastyArgs.end());
    ProcessResult r = run_process(cmd(argv));
    REQUIRE(r.ok());
    std::string expected;
    for (const auto& a : kNastyArgs) expected += a + '\0';
    CHECK(r.output == expected);
}

TEST_CASE("paths with spaces, quotes and UTF-8 pass through", "[process]") {
    test::TempDir tmp;
    fs::path dir = tmp / "d ir 'q' \"dq\" é $HOME";
    test::write_file(dir / "f *.txt", "content\n");
    fs::create_symlink("/bin/echo", dir / "é cho");

    Command in_dir = cmd({"/bin/cat", "f *.txt"});
    in_dir.cwd = dir.string();
    ProcessResult r = run_process(in_dir);
    CHECK(r.ok());
    CHECK(r.output == "content\n");

    ProcessResult by_path = run_process(cmd({(dir / "é cho").string(), "x y"}));
    CHECK(by_path.ok());
    CHECK(by_path.output == "x y\n");

    Command pwd = cmd({"/bin/pwd"});
    pwd.cwd = dir.string();
    CHECK(run_process(pwd).output == fs::canonical(dir).string() + "\n");
}

TEST_CASE("environment overrides are added and replace existing values", "[process]") {
    Command c = cmd({"/usr/bin/env"});
    c.env_overrides = {{"BEKC_TEST_VAR", "va lue $x"}, {"HOME", "/nowhere"}};
    ProcessResult r = run_process(c);
    REQUIRE(r.ok());
    CHECK_THAT(r.output, Catch::Contains("\nBEKC_TEST_VAR=va lue $x\n"));
    CHECK_THAT(r.output, Catch::Contains("HOME=/nowhere\n"));
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') >= 2);
    size_t homes = 0;
    for (size_t p = 0; (p = r.output.find("HOME=", p)) != std::string::npos; ++p) {
        if (p == 0 || r.output[p - 1] == '\n') ++homes;
    }
    CHECK(homes == 1);
}

TEST_CASE("stdout and stderr are merged in the order written", "[process]") {
    test::TempDir tmp;
    test::write_file(tmp / "a", "first\n");
    test::write_file(tmp / "b", "last\n");
    ProcessResult r = run_process(
        cmd({"/bin/cat", (tmp / "a").string(), (tmp / "missing").string(), (tmp / "b").string()}));
    CHECK(r.exit_code == 1);
    CHECK(r.output ==
          "first\n/bin/cat: " + (tmp / "missing").string() + ": No such file or directory\nlast\n");
}

TEST_CASE("ten megabytes of output do not deadlock", "[process]") {
    test::TempDir tmp;
    std::string big;
    big.reserve(10 * 1024 * 1024 + 64);
    for (int i = 0; big.size() < 10 * 1024 * 1024; ++i) big += "line " + std::to_string(i) + "\n";
    test::write_file(tmp / "big.txt", big);
    ProcessResult r = run_process(cmd({"/bin/cat", (tmp / "big.txt").string()}));
    CHECK(r.ok());
    CHECK(r.output.size() == big.size());
    CHECK(r.output == big);
}

TEST_CASE("stdin is empty, so a program reading it does not hang", "[process]") {
    ProcessResult r = run_process(cmd({"/bin/cat"}), RunOptions{5s});
    CHECK(r.ok());
    CHECK(r.output.empty());
}

TEST_CASE("exit codes are reported", "[process]") {
    ProcessResult f = run_process(cmd({"/bin/false"}));
    CHECK(f.status == ProcessStatus::Exited);
    CHECK(f.exit_code == 1);
    CHECK_FALSE(f.ok());
    CHECK(f.describe() == "exited with code 1");
    ProcessResult ls = run_process(cmd({"/bin/ls", "/nonexistent-bekc-path"}));
    CHECK(ls.exit_code == 2);
    CHECK_THAT(ls.output, Catch::Contains("nonexistent-bekc-path"));
}

TEST_CASE("a program that cannot start is a SpawnFailed result", "[process]") {
    ProcessResult missing = run_process(cmd({"/nonexistent/prog", "x"}));
    CHECK(missing.status == ProcessStatus::SpawnFailed);
    CHECK_THAT(missing.error,
               Catch::Contains("/nonexistent/prog") && Catch::Contains("No such file"));
    CHECK(missing.describe() == missing.error);
    CHECK(run_process(cmd({"bekc-no-such-program-xyz"})).status == ProcessStatus::SpawnFailed);
    CHECK(run_process(cmd({})).status == ProcessStatus::SpawnFailed);

    test::TempDir tmp;
    test::write_file(tmp / "not-executable", "#!/bin/sh\n");
    ProcessResult denied = run_process(cmd({(tmp / "not-executable").string()}));
    CHECK(denied.status == ProcessStatus::SpawnFailed);
    CHECK_THAT(denied.error, Catch::Contains("Permission denied"));

    Command bad_cwd = cmd({"/bin/echo"});
    bad_cwd.cwd = (tmp / "no-such-dir").string();
    CHECK(run_process(bad_cwd).status == ProcessStatus::SpawnFailed);
}

TEST_CASE("death by a signal is reported as such", "[process]") {
    if (!fs::exists("/usr/bin/perl")) {
        WARN("no /usr/bin/perl to raise a signal with");
        return;
    }
    ProcessResult r = run_process(cmd({"/usr/bin/perl", "-e", "kill 'KILL', $$"}));
    CHECK(r.status == ProcessStatus::Signaled);
    CHECK(r.signal == SIGKILL);
    CHECK_FALSE(r.ok());
    CHECK(r.describe() == "killed by signal 9 (Killed)");
}

TEST_CASE("a timeout kills the process", "[process]") {
    ProcessResult r = run_process(cmd({"/bin/sleep", "10"}), RunOptions{200ms});
    CHECK(r.status == ProcessStatus::TimedOut);
    CHECK(r.signal == SIGKILL);
    CHECK(r.wall_time >= 200ms);
    CHECK(r.wall_time < 5s);
    CHECK_THAT(r.describe(), Catch::StartsWith("timed out after 0."));

    ProcessResult quick = run_process(cmd({"/bin/echo", "x"}), RunOptions{5s});
    CHECK(quick.ok());

    if (fs::exists("/usr/bin/perl")) {
        // Closing its output does not let a process escape the timeout.
        ProcessResult quiet = run_process(
            cmd({"/usr/bin/perl", "-e", "print 'bye'; close STDOUT; close STDERR; sleep 10"}),
            RunOptions{300ms});
        CHECK(quiet.status == ProcessStatus::TimedOut);
        CHECK(quiet.output == "bye");
        CHECK(quiet.wall_time < 5s);
    }
}

TEST_CASE("display_command quotes for a POSIX shell only where needed", "[process]") {
    Command c = cmd({"/usr/bin/cc", "-o", "out file", "it's", "$HOME", "-DX=1", "", "é"});
    CHECK(display_command(c) == "/usr/bin/cc -o 'out file' 'it'\\''s' '$HOME' -DX=1 '' 'é'");
    c.cwd = "/tmp/my dir";
    c.env_overrides = {{"LANG", "C"}, {"X", "a b"}};
    CHECK(display_command(c) ==
          "cd '/tmp/my dir' && LANG=C X='a b' /usr/bin/cc -o 'out file' 'it'\\''s' '$HOME' -DX=1 "
          "'' 'é'");
    CHECK(display_command(cmd({"a=b", "c=d"})) == "'a=b' c=d");
    CHECK(shell_quote("line1\nline2") == "'line1\nline2'");
}

TEST_CASE("run_parallel returns results in input order", "[process]") {
    std::vector<Command> cmds = {cmd({"/bin/sleep", "0.3"}), cmd({"/bin/echo", "b"}),
                                 cmd({"/bin/sleep", "0.1"}), cmd({"/bin/echo", "d"})};
    std::vector<size_t> finished;
    auto results = run_parallel(cmds, 4, [&](const ProgressEvent& e) {
        if (e.kind == ProgressEvent::Kind::Finished) finished.push_back(e.index);
    });
    REQUIRE(results.size() == 4);
    for (const auto& r : results) CHECK(r.ok());
    CHECK(results[1].output == "b\n");
    CHECK(results[3].output == "d\n");
    REQUIRE(finished.size() == 4);
    CHECK(finished.back() == 0);  // the longest finished last
}

TEST_CASE("run_parallel runs at most `jobs` commands at once", "[process]") {
    std::vector<Command> cmds(6, cmd({"/bin/sleep", "0.2"}));
    int active = 0, most = 0;
    auto start = std::chrono::steady_clock::now();
    auto results = run_parallel(cmds, 2, [&](const ProgressEvent& e) {
        active += e.kind == ProgressEvent::Kind::Started ? 1 : -1;
        most = std::max(most, active);
    });
    CHECK(most == 2);
    CHECK(std::chrono::steady_clock::now() - start >= 550ms);
    for (const auto& r : results) CHECK(r.ok());
}

TEST_CASE("run_parallel stops launching after a failure unless keep_going", "[process]") {
    std::vector<Command> cmds = {cmd({"/bin/echo", "a"}), cmd({"/bin/false"}),
                                 cmd({"/bin/echo", "c"})};
    auto stopped = run_parallel(cmds, 1);
    CHECK(stopped[0].ok());
    CHECK(stopped[1].exit_code == 1);
    CHECK(stopped[2].status == ProcessStatus::NotRun);

    ParallelOptions keep_going;
    keep_going.keep_going = true;
    auto all = run_parallel(cmds, 1, {}, keep_going);
    CHECK(all[2].ok());
    CHECK(all[2].output == "c\n");

    cmds[1] = cmd({"/nonexistent/prog"});
    CHECK(run_parallel(cmds, 1)[2].status == ProcessStatus::NotRun);
    CHECK(run_parallel({}, 4).empty());
}

TEST_CASE("run_parallel counts a command's slots against jobs", "[process]") {
    // Two 2-slot commands and two 1-slot ones within -j 3: a 2-slot command
    // never runs beside the other one.
    std::vector<Command> cmds(4, cmd({"/bin/sleep", "0.2"}));
    cmds[0].slots = 2;
    cmds[1].slots = 2;
    int busy = 0, most = 0;
    std::vector<size_t> started;
    auto results = run_parallel(cmds, 3, [&](const ProgressEvent& e) {
        bool start = e.kind == ProgressEvent::Kind::Started;
        busy += (start ? 1 : -1) * e.command.slots;
        most = std::max(most, busy);
        if (start) started.push_back(e.index);
    });
    CHECK(most <= 3);
    CHECK(most >= 2);
    CHECK(started == std::vector<size_t>{0, 1, 2, 3});  // in order: none jumps the queue
    for (const auto& r : results) CHECK(r.ok());
}

TEST_CASE("run_parallel starts a command only when it may, and skips one that never will",
          "[process]") {
    // 1 waits for 0 to finish; 2 is skipped; 3 waits for something that never comes.
    std::vector<Command> cmds = {cmd({"/bin/sleep", "0.2"}), cmd({"/bin/echo", "b"}),
                                 cmd({"/bin/echo", "c"}), cmd({"/bin/echo", "d"})};
    std::mutex m;
    bool first_done = false;
    std::vector<size_t> started;
    ParallelOptions po;
    po.ready = [&](size_t i) {
        std::lock_guard lock(m);
        if (i == 1) return first_done ? Readiness::Start : Readiness::Wait;
        if (i == 2) return Readiness::Skip;
        if (i == 3) return Readiness::Wait;
        return Readiness::Start;
    };
    auto results = run_parallel(
        cmds, 4,
        [&](const ProgressEvent& e) {
            std::lock_guard lock(m);
            if (e.kind == ProgressEvent::Kind::Started) started.push_back(e.index);
            if (e.kind == ProgressEvent::Kind::Finished && e.index == 0) first_done = true;
        },
        po);
    CHECK(started == std::vector<size_t>{0, 1});
    CHECK(results[0].ok());
    CHECK(results[1].output == "b\n");
    CHECK(results[2].status == ProcessStatus::NotRun);
    CHECK(results[3].status == ProcessStatus::NotRun);
}

TEST_CASE("execute_graph: a step starts as soon as the steps it comes after are done",
          "[process]") {
    // A slow step beside a chain of two quick ones, within -j 2: the chain's
    // second step does not wait for the slow one (as it would for a whole
    // wave to finish), and the link after all three waits for each.
    test::TempDir tmp;
    const fs::path order = tmp.path() / "order";
    BuildGraph g;
    auto step = [&](const std::string& name, std::vector<std::string> argv,
                    std::vector<size_t> after) {
        Step s;
        s.kind = after.size() == 3 ? StepKind::Link : StepKind::Compile;
        s.command.argv = std::move(argv);
        s.command.description = name;
        s.after = std::move(after);
        g.steps.push_back(std::move(s));
    };
    const std::string log = "echo $0 >> " + order.string();
    step("slow", {"/bin/sh", "-c", "sleep 1; " + log, "slow"}, {});
    step("quick", {"/bin/sh", "-c", log, "quick"}, {});
    step("after quick", {"/bin/sh", "-c", log, "after-quick"}, {1});
    step("link", {"/bin/sh", "-c", log, "link"}, {0, 1, 2});
    GraphRun run;
    REQUIRE(run.execute(g));
    auto text = read_file(order);
    REQUIRE(text);
    CHECK(*text == "quick\nafter-quick\nslow\nlink\n");
    CHECK(run.finished == std::vector<std::string>{"quick", "after quick", "slow", "link"});
}

TEST_CASE("execute_graph: a failed step stops the build, and what comes after it never starts",
          "[process]") {
    BuildGraph g;
    for (int i = 0; i < 3; ++i) {
        Step s;
        s.command.argv = {i == 1 ? "/bin/false" : "/bin/true"};
        s.command.description = "step " + std::to_string(i);
        if (i == 2) s.after = {1};
        g.steps.push_back(std::move(s));
    }
    GraphRun run;
    auto done = run.execute(g);
    REQUIRE_FALSE(done);
    CHECK(done.error().step == 1);
    CHECK(done.error().result.exit_code == 1);
    CHECK(std::find(run.finished.begin(), run.finished.end(), "step 2") == run.finished.end());
    // Two that fail side by side: the one that started first is reported,
    // though the other ended first.
    // (Step 1 starts first: step 2 comes after it.)
    g.steps[0].command.argv = {"/bin/false"};
    g.steps[1].command.argv = {"/bin/sh", "-c", "sleep 0.3; exit 3"};
    done = run.execute(g);
    REQUIRE_FALSE(done);
    CHECK(done.error().step == 1);
    CHECK(done.error().result.exit_code == 3);
}

TEST_CASE("run_parallel runs a command wider than -j alone, not never", "[process]") {
    std::vector<Command> cmds(2, cmd({"/bin/true"}));
    cmds[0].slots = 8;
    auto results = run_parallel(cmds, 2);
    CHECK(results[0].ok());
    CHECK(results[1].ok());
}

TEST_CASE("each child leads its own process group", "[process]") {
    auto r = run_process(cmd({"sh", "-c", "ps -o pgid= -p $$; echo $$"}));
    REQUIRE(r.status == ProcessStatus::Exited);
    std::istringstream in(r.output);
    long pgid = 0, pid = 0;
    in >> pgid >> pid;
    CHECK(pgid == pid);
}

TEST_CASE("a child gets SIGKILL when bekc dies (its parent-death signal)", "[process]") {
    auto r = run_process(cmd({"python3", "-c",
                              "import ctypes; s = ctypes.c_int(0); "
                              "ctypes.CDLL(None).prctl(2, ctypes.byref(s), 0, 0, 0); "
                              "print(s.value)"}));
    REQUIRE(r.status == ProcessStatus::Exited);
    CHECK(r.output == std::to_string(SIGKILL) + "\n");
}

TEST_CASE("run_parallel starts nothing more once bekc is interrupted", "[process]") {
    // In a child process of its own: the interruption is for the whole run.
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        install_interrupt_handlers();
        // The first command interrupts bekc (its parent) as Ctrl-C would, and
        // waits to be stopped; the rest must never start.
        std::vector<Command> cmds = {cmd({"/bin/sh", "-c", "kill -INT $PPID; sleep 30"}),
                                     cmd({"/bin/echo", "b"}), cmd({"/bin/echo", "c"})};
        ParallelOptions keep_going;
        keep_going.keep_going = true;  // as the package build runs its modules
        auto start = std::chrono::steady_clock::now();
        auto results = run_parallel(cmds, 1, {}, keep_going);
        bool fast = std::chrono::steady_clock::now() - start < 20s;
        bool rest_not_run = results[1].status == ProcessStatus::NotRun &&
                            results[2].status == ProcessStatus::NotRun;
        ::_exit(interrupted_by() == SIGINT && fast && rest_not_run ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("private build directories a killed bekc left are swept once a day old", "[fs]") {
    test::TempDir tmp;
    fs::path old_build = tmp.path() / "build.aaaa.X1", new_build = tmp.path() / "build.bbbb.X2",
             other = tmp.path() / "paths", link = tmp.path() / "build.link";
    for (const auto& d : {old_build, new_build, other}) fs::create_directories(d / "sub");
    fs::create_directory_symlink(other, link);
    auto two_days_ago = fs::file_time_type::clock::now() - std::chrono::hours(48);
    for (const auto& d : {old_build, other}) fs::last_write_time(d, two_days_ago);
    remove_stale_private_dirs(tmp.path(), "build.cccc", kStalePrivateDirAge);
    CHECK_FALSE(fs::exists(old_build));    // another key's, a day old: gone
    CHECK(fs::exists(new_build / "sub"));  // young: may be a build running now
    CHECK(fs::exists(other / "sub"));      // not a build directory
    CHECK(fs::is_symlink(link));           // never through a link
}
