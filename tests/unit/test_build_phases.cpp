// The phases of `bekc build` (driver/build.hpp) called one at a time with a
// fake runner: what each returns, and what it leaves in the cache and on disk.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <thread>

#include "../helpers/driver_fixture.hpp"
#include "driver/phases.hpp"
#include "store/file_ops.hpp"
#include "store/runtime_headers.hpp"
#include "util/error.hpp"

using namespace bekc;
using test::DriverFixture;
using namespace std::chrono_literals;

namespace {

// What stderr receives while it lives (the phases' warnings).
class PhaseStderr {
  public:
    PhaseStderr() : file_(std::tmpfile()) {
        std::fflush(stderr);
        saved_ = ::dup(STDERR_FILENO);
        ::dup2(::fileno(file_), STDERR_FILENO);
    }
    ~PhaseStderr() { restore(); }
    std::string text() {
        restore();
        std::string out;
        std::rewind(file_);
        char buf[4096];
        for (size_t n; (n = std::fread(buf, 1, sizeof buf, file_)) > 0;) out.append(buf, n);
        return out;
    }

  private:
    void restore() {
        if (saved_ < 0) return;
        std::fflush(stderr);
        ::dup2(saved_, STDERR_FILENO);
        ::close(saved_);
        saved_ = -1;
    }
    std::FILE* file_;
    int saved_ = -1;
};

// The phases up to `execute`, as run_build chains them on a miss.
struct PhaseRun {
    DriverFixture& f;
    BuildContext ctx;
    Reporter report;
    // Read by every later phase, changed by none.
    const BuildInputs in;
    PlannedBuild planned;

    explicit PhaseRun(DriverFixture& fixture)
        : f(fixture),
          ctx(fixture.context()),
          report(fixture.o),
          in(prepare_build(fixture.o, ctx)),
          planned(plan_build(in, fixture.o)) {}

    LookUp look_up(Cache& cache) { return bekc::look_up(in, f.o, planned, cache, ctx, report); }
    Executed execute(const Cache& cache) { return bekc::execute(in, f.o, planned, cache, ctx); }
    Published publish(const Executed& built, Cache& cache, std::optional<RemoteCache> remote = {}) {
        return bekc::publish(in, f.o, planned, built, cache, remote, ctx, report);
    }
};

// A runner that saves an input again while the first compiles run.
class EditingRunner final : public Runner {
  public:
    EditingRunner(test::FakeRunner& inner, fs::path file) : inner_(inner), file_(std::move(file)) {}
    std::expected<void, Error> write_file(const fs::path& path, std::string_view content) override {
        return inner_.write_file(path, content);
    }
    std::vector<ProcessResult> run(const std::vector<Command>& commands, int jobs,
                                   const ProgressCallback& on_event,
                                   const ParallelOptions& with) override {
        if (!edited_ && commands.size() > 1) {
            test::write_file(file_, test::read_file(file_) + "// saved again\n");
            edited_ = true;
        }
        return inner_.run(commands, jobs, on_event, with);
    }

  private:
    test::FakeRunner& inner_;
    fs::path file_;
    bool edited_ = false;
};

}  // namespace

TEST_CASE(
    "plan: the graph with placeholder directories, a target per exported function, and the "
    "direct key read from that graph; planning writes and runs nothing",
    "[phases]") {
    DriverFixture f;
    f.o.target_prefix = "kern";
    f.o.compile_commands = (f.tmp / "compile_commands.json").string();
    BuildContext ctx = f.context();
    const BuildInputs in = prepare_build(f.o, ctx);
    const auto batches = f.runner.batches.size();
    const int probes = f.runner.probes;
    const auto written = f.runner.written.size();
    PlannedBuild p = plan(in, f.o).value();
    CHECK(p.targets == std::vector<std::string>{"kern.scale", "kern.shift"});
    // Every step of the build, its directories placeholders: a wrapper per
    // input and the entry points, the runtime's two steps, three compiles,
    // the link.
    REQUIRE(p.graph.steps.size() == 9);
    CHECK(p.graph.library == "/$BEKC_BUILD/libm.so");
    const std::string cache = (f.tmp / "cache").string();
    for (const Step& s : p.graph.steps) {
        for (const auto& a : s.command.argv) CHECK(a.find(cache) == std::string::npos);
        for (const auto& o : s.command.outputs)
            CHECK((o.starts_with("/$BEKC_BUILD/") || o.starts_with("/$BEKC_RUNTIME/")));
    }
    CHECK(p.direct_key == direct_key_builder(in, p.graph).digest());
    CHECK(p.direct_key_record == direct_key_builder(in, p.graph).explain());
    // Nothing written (compile_commands.json, the runtime headers) and
    // nothing run (not even nvcc --dryrun).
    CHECK_FALSE(fs::exists(f.tmp / "compile_commands.json"));
    CHECK_FALSE(fs::exists(runtime_include_dir(in.cache_root)));
    CHECK(f.runner.batches.size() == batches);
    CHECK(f.runner.probes == probes);
    CHECK(f.runner.written.size() == written);
    // The build writes compile_commands.json in a step of its own, not in a
    // dry run.
    f.o.dry_run = true;
    write_planned_compile_commands(in, f.o);
    CHECK_FALSE(fs::exists(f.tmp / "compile_commands.json"));
    f.o.dry_run = false;
    write_planned_compile_commands(in, f.o);
    CHECK(fs::exists(f.tmp / "compile_commands.json"));
}

TEST_CASE("execute: nvcc is asked for its phases once, even when the build runs again",
          "[phases]") {
    DriverFixture f;
    PhaseRun run(f);
    // A linker without --dependency-file: the build runs again without it,
    // and fails again.
    f.runner.fail_when = "link libm.so";
    f.runner.fail_output = "ld: unrecognized option '--dependency-file=link.d'\n";
    const int dryruns = f.runner.dryruns;
    {
        PhaseStderr quiet;
        CHECK_THROWS_AS(run.execute(Cache(run.in.cache_root)), FatalError);
    }
    auto all = f.runner.all_descriptions();
    CHECK(std::count(all.begin(), all.end(), "link libm.so") == 2);
    // One CUDA input, one dry run of nvcc for both runs of the graph.
    CHECK(f.runner.dryruns - dryruns == 1);
}

TEST_CASE("look_up: a first build misses, says why, and holds the key's lock", "[phases]") {
    DriverFixture f;
    PhaseRun run(f);
    Cache cache(run.in.cache_root);
    LookUp found = run.look_up(cache);
    CHECK_FALSE(found.entry);
    CHECK_FALSE(found.remote_hit);
    CHECK(found.miss_reason == "no direct-mode record");
    REQUIRE(found.lock);
    // Another build of the same inputs would wait.
    CHECK_FALSE(FileLock::try_acquire(cache.dir(), CacheLayout::lock(run.planned.direct_key)));
    CHECK_FALSE(found.remote);
    CHECK(f.runner.batches.empty());
}

TEST_CASE("look_up: after a build, a local hit without the lock", "[phases]") {
    DriverFixture f;
    BuildResult built = f.build();
    PhaseRun run(f);
    Cache cache(run.in.cache_root);
    LookUp found = run.look_up(cache);
    REQUIRE(found.entry);
    CHECK(found.entry->manifest() == built.manifest);
    CHECK(found.miss_reason.empty());
    CHECK_FALSE(found.lock);

    // --force: the entry is not used, and this build takes the lock.
    f.o.force = true;
    LookUp forced = run.look_up(cache);
    CHECK_FALSE(forced.entry);
    CHECK(forced.miss_reason == "--force");
    CHECK(forced.lock);
}

TEST_CASE("look_up: a build that waits for the lock finds the entry its holder published",
          "[phases]") {
    DriverFixture f;
    BuildResult first = f.build();
    PhaseRun run(f);
    Cache cache(run.in.cache_root);
    // The holder has not published yet: no direct record.
    fs::path record = cache.path() / CacheLayout::direct_record(run.planned.direct_key);
    REQUIRE(fs::exists(record));
    fs::path aside = f.tmp / "record";
    fs::rename(record, aside);
    auto holder = cache.lock(CacheLayout::lock(run.planned.direct_key));
    REQUIRE(holder);

    auto waiter = std::async(std::launch::async, [&] { return run.look_up(cache); });
    CHECK(waiter.wait_for(1s) == std::future_status::timeout);
    fs::rename(aside, record);  // published
    holder->release();
    LookUp found = waiter.get();
    REQUIRE(found.entry);
    CHECK(found.entry->manifest() == first.manifest);
    CHECK(found.miss_reason == "no direct-mode record");
    CHECK(found.lock);
    CHECK(f.runner.batches.size() == 1);  // the first build's steps only
}

TEST_CASE(
    "look_up: giving up on the cache lock names the lock and its holder, and what to do as a note",
    "[phases]") {
    DriverFixture f;
    PhaseRun run(f);
    auto holder = Cache(run.in.cache_root).lock(CacheLayout::lock(run.planned.direct_key));
    REQUIRE(holder);
    Cache cache(run.in.cache_root, CacheOptions{.lock_timeout = 200ms});
    try {
        (void)run.look_up(cache);
        FAIL("look_up went on without the lock");
    } catch (const FatalError& e) {
        const Error& error = e.error();
        CHECK(e.exit_code() == kExitCache);
        CHECK_THAT(error.message,
                   Catch::StartsWith("gave up after 0.2 s waiting for the cache lock " +
                                     holder->path().string() + ", held by pid " +
                                     std::to_string(::getpid())));
        REQUIRE(error.notes.size() == 1);
        CHECK_THAT(error.notes[0],
                   Catch::StartsWith("another bekc process is building the same cache entry: "
                                     "let it finish or stop it, then run again"));
        CHECK_THAT(e.what(), Catch::Contains("\nnote: another bekc process"));
    }
}

TEST_CASE("execute: every step runs in a private directory that goes with the value", "[phases]") {
    DriverFixture f;
    PhaseRun run(f);
    Cache cache(run.in.cache_root);
    fs::path dir;
    {
        Executed built = run.execute(cache);
        dir = built.dir.path();
        CHECK_FALSE(built.edited);
        CHECK(fs::exists(dir / "libm.so"));
        CHECK(built.multiarch == "x86_64-linux-gnu");
        // The compilers' depfiles, as reported: the fake compilers read only
        // the wrappers (two inputs, the entry points), all in the directory.
        CHECK(built.dependencies.compile.size() == 3);
        for (const auto& d : built.dependencies.compile) CHECK(d.rfind(dir.string() + "/", 0) == 0);
        CHECK(built.dependencies.link_reported);
        CHECK(built.start_ns <= now_ns());
        CHECK(f.runner.ran("link libm.so"));
    }
    CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("execute: an input saved during the compile is named and the build is not used",
          "[phases]") {
    DriverFixture f;
    PhaseRun run(f);
    EditingRunner editing(f.runner, f.tmp / "src/b.cpp");
    BuildContext ctx{editing};
    ctx.env = run.ctx.env;
    ctx.raw_env = run.ctx.raw_env;
    ctx.tools = run.ctx.tools;
    ctx.cwd = run.ctx.cwd;
    Executed built = execute(run.in, f.o, run.planned, Cache(run.in.cache_root), ctx);
    REQUIRE(built.edited);
    CHECK(*built.edited == (f.tmp / "src/b.cpp").string());
}

TEST_CASE("publish: the entry under the full key, and the record the next look-up uses",
          "[phases]") {
    DriverFixture f;
    PhaseRun run(f);
    Cache cache(run.in.cache_root);
    LookUp missed = run.look_up(cache);
    Executed built = run.execute(cache);
    Published p = run.publish(built, cache, std::move(missed.remote));
    CHECK_FALSE(p.changed);
    CHECK(p.entry.key == p.key);
    CHECK(fs::exists(p.entry.library));
    CHECK(fs::exists(p.entry.manifest(true)));
    CHECK(fs::exists(p.entry.manifest(false)));
    missed.lock.reset();

    LookUp found = run.look_up(cache);
    REQUIRE(found.entry);
    CHECK(found.entry->key == p.key);
}

TEST_CASE("publish: a header changed while the compilers ran is used, not cached", "[phases]") {
    DriverFixture f;
    f.o.quiet = false;
    // C++ only: the fake nvcc's toolkit would be the whole directory.
    f.o.inputs = {(f.tmp / "src/b.cpp").string()};
    PhaseRun run(f);
    Cache cache(run.in.cache_root);
    Executed built = run.execute(cache);
    // The compiler read a header of the user's that was saved after the
    // compile started (file times come from a clock that lags by a tick).
    std::this_thread::sleep_for(50ms);
    fs::path header = f.tmp / "src/saved.h";
    test::write_file(header, "// new\n");
    built.dependencies.compile.push_back(header.string());
    PhaseStderr err;
    Published p = run.publish(built, cache);
    std::string said = err.text();
    REQUIRE(p.changed);
    CHECK(*p.changed == header.string());
    CHECK(said == "bekc: warning: " + header.string() +
                      " changed during the build; the result is used but not cached\n");
    CHECK(fs::exists(p.entry.library));
    // No direct record: the next build compiles again.
    LookUp next = run.look_up(cache);
    CHECK_FALSE(next.entry);
    CHECK(next.miss_reason == "no direct-mode record");
}

TEST_CASE("publish: --force replaces the entry, and says so when the library differs", "[phases]") {
    DriverFixture f;
    f.o.quiet = false;
    BuildResult first = f.build();
    f.o.force = true;
    PhaseRun run(f);
    Cache cache(run.in.cache_root);
    {
        // The same bytes again: replaced in silence.
        Executed built = run.execute(cache);
        PhaseStderr err;
        Published p = run.publish(built, cache);
        CHECK(err.text().empty());
        CHECK(p.entry.manifest() == first.manifest);
    }
    Executed built = run.execute(cache);
    test::write_file(built.dir.path() / "libm.so", "another library\n");
    PhaseStderr err;
    Published p = run.publish(built, cache);
    std::string said = err.text();
    CHECK(test::read_file(p.entry.library) == "another library\n");
    CHECK_THAT(said, Catch::StartsWith("bekc: warning: --force rebuilt cache entry " + p.key +
                                       " and the library differs from the one it replaced"));
}

TEST_CASE("publish: the cache is kept under its size limit", "[phases]") {
    DriverFixture f;
    BuildResult first = f.build();
    f.o.flags.opt_level = 1;  // another entry
    f.env["BEKC_CACHE_MAX_SIZE"] = "1k";
    PhaseRun run(f);
    // Entries just used are spared by default; not here.
    Cache cache(run.in.cache_root, CacheOptions{.recent_use = 0s});
    LookUp missed = run.look_up(cache);
    Executed built = run.execute(cache);
    Published p = run.publish(built, cache);
    CHECK(fs::exists(p.entry.library));
    CHECK_FALSE(fs::exists(first.library));
}

TEST_CASE("deliver: the entry's manifest, or -o's copies, and the --depfile", "[phases]") {
    DriverFixture f;
    BuildResult built = f.build();
    PhaseRun run(f);
    const BuildInputs& in = run.in;
    Cache cache(in.cache_root);
    Reporter report(f.o);
    std::optional<Entry> entry = run.look_up(cache).entry;
    REQUIRE(entry);

    Delivered d = deliver(in, f.o, cache, *entry, true, report);
    CHECK(d.manifest == entry->manifest(true));
    CHECK(d.library == entry->library);
    f.o.no_cuda_graph = true;
    CHECK(deliver(in, f.o, cache, *entry, true, report).manifest == entry->manifest(false));
    f.o.no_cuda_graph = false;

    f.o.output_dir = (f.tmp / "out").string();
    f.o.depfile = (f.tmp / "out.d").string();
    d = deliver(in, f.o, cache, *entry, true, report);
    CHECK(d.manifest == f.tmp / "out/manifest.json");
    CHECK(d.library == f.tmp / "out/libm.so");
    CHECK(test::read_file(d.manifest) == test::read_file(entry->manifest(true)));
    CHECK(test::read_file(d.library) == test::read_file(entry->library));
    CHECK(fs::exists(entry->library));  // the cache keeps its own
    CHECK(test::read_file(f.tmp / "out.d") == d.manifest.string() + ": \\\n  " +
                                                  (f.tmp / "src/a.cu").string() + " \\\n  " +
                                                  (f.tmp / "src/b.cpp").string() + "\n");
}

TEST_CASE("run_build_if_cached: a miss runs and writes nothing, a hit is run_build's", "[phases]") {
    DriverFixture f;
    std::string said;
    {
        BuildContext ctx = f.context();
        f.o.quiet = false;
        Reporter report(f.o, &said);
        CHECK_FALSE(run_build_if_cached(f.o, ctx, report));
        f.o.quiet = true;
    }
    // Only the tools' version probes: no wrapper written, nothing compiled,
    // no lock or entry in the cache.
    CHECK(f.runner.batches.empty());
    CHECK(f.runner.written.empty());
    CHECK_FALSE(fs::exists(f.tmp / "cache" / "entries"));
    CHECK_FALSE(fs::exists(f.tmp / "cache" / "locks"));

    BuildResult built = f.build();
    int probes = f.runner.probes;
    BuildContext ctx = f.context();
    std::optional<BuildResult> hit = run_build_if_cached(f.o, ctx, Reporter(f.o));
    REQUIRE(hit);
    CHECK(hit->cache_hit);
    CHECK(hit->manifest == built.manifest);
    CHECK(hit->library == built.library);
    CHECK(hit->targets == built.targets);
    CHECK(hit->direct_key == built.direct_key);
    CHECK(f.runner.probes == probes);  // the versions were remembered
}

TEST_CASE("run_build_if_cached: a corrupt entry is reported, and left for the build to repair",
          "[phases]") {
    DriverFixture f;
    BuildResult built = f.build();
    { std::ofstream(built.library, std::ios::app) << "tampered"; }
    f.o.quiet = false;
    std::string said;
    BuildContext ctx = f.context();
    CHECK_FALSE(run_build_if_cached(f.o, ctx, Reporter(f.o, &said)));
    CHECK(said.find("is corrupt") != std::string::npos);
    CHECK(fs::exists(built.library));  // not removed

    PhaseStderr err;
    BuildResult rebuilt = f.build();
    CHECK_FALSE(rebuilt.cache_hit);
    CHECK(err.text().find("is corrupt") != std::string::npos);
}
