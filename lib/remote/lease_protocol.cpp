// The lease protocol's requests (remote/lease.hpp): who compiles a miss that
// several machines have at once, and how the others wait for it.
#include <unistd.h>

#include <random>
#include <thread>

#include <fmt/format.h>

#include "remote/lease.hpp"
#include "remote/remote_cache.hpp"
#include "run/interrupt.hpp"
#include "store/stats.hpp"
#include "util/fs.hpp"

namespace bekc {

namespace {

using SteadyClock = std::chrono::steady_clock;

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

uint64_t ms_since(SteadyClock::time_point start) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - start).count());
}

// Sleeps `pause`, in short steps so that Ctrl-C is not kept waiting; false
// when the run was interrupted.
bool pause_for(std::chrono::milliseconds pause) {
    auto end = SteadyClock::now() + pause;
    while (SteadyClock::now() < end) {
        if (!check_interrupted()) return false;
        std::this_thread::sleep_for(std::min<SteadyClock::duration>(std::chrono::milliseconds(50),
                                                                    end - SteadyClock::now()));
    }
    return static_cast<bool>(check_interrupted());
}

}  // namespace

RemoteCache::~RemoteCache() {
    try {
        end_lease(Lease::State::Released);
    } catch (...) {
        // Unwinding already; the lease expires by itself.
    }
}

RemoteCache& RemoteCache::operator=(RemoteCache&& other) noexcept {
    if (this == &other) return *this;
    try {
        end_lease(Lease::State::Released);
    } catch (...) {
    }
    config_ = std::move(other.config_);
    warn_ = std::move(other.warn_);
    base_ = std::move(other.base_);
    http_ = std::move(other.http_);
    held_ = std::move(other.held_);
    return *this;
}

std::string RemoteCache::lease_url(const std::string& direct_key, int generation) const {
    return fmt::format("{}/leases/{}.{}.json", base_, direct_key, generation);
}

std::optional<Entry> RemoteCache::fetch_or_wait(Cache& cache, const std::string& direct_key,
                                                const BaseDir& base) {
    if (auto hit = fetch(cache, direct_key, base)) return hit;
    if (!http_ || config_.wait.count() == 0) return std::nullopt;
    return coordinate(cache, direct_key, base);
}

std::optional<Entry> RemoteCache::coordinate(Cache& cache, const std::string& direct_key,
                                             const BaseDir& base) {
    auto scratch = scratch_dir(cache);
    if (!scratch) return std::nullopt;
    const auto start = SteadyClock::now();
    for (int generation = 0; generation < kMaxLeaseGenerations && http_; ++generation) {
        std::string url = lease_url(direct_key, generation);
        if (!config_.read_only) {
            Claim claim = claim_lease(cache, url, *scratch);
            if (claim != Claim::Taken) return std::nullopt;
        }
        // Each builder is waited for at most the bound, by this clock.
        Waited waited = wait_on_lease(url, *scratch, SteadyClock::now() + config_.wait);
        using End = Waited::End;
        if (waited.end == End::Failed || (waited.end == End::Absent && config_.read_only))
            return std::nullopt;
        if (waited.end == End::TimedOut) {
            warn_(fmt::format(
                "remote cache: waited {} s ($BEKC_REMOTE_WAIT) for {} to build this; building here",
                config_.wait.count(), waited.lease.owner));
            (void)count_remote_wait(cache.dir(), false, ms_since(start), 0);
            return std::nullopt;
        }
        // Done, or gone: the entry may be there either way.
        auto hit = fetch(cache, direct_key, base);
        if (hit || waited.end == End::Done) {
            bool served = hit.has_value();
            (void)count_remote_wait(cache.dir(), served, ms_since(start),
                                    served ? waited.lease.build_ms : 0);
            return hit;
        }
        // Released, expired or malformed: the next generation.
    }
    return std::nullopt;
}

RemoteCache::Claim RemoteCache::claim_lease(const Cache& cache, const std::string& url,
                                            const Scratch& scratch) {
    Lease lease{Lease::State::Building, lease_owner(), unix_now() + config_.wait.count(), 0};
    fs::path file = scratch.file("lease.json");
    if (auto w = write_atomic(file, render_lease(lease)); !w) {
        warn_("remote cache: " + w.error().message);
        return Claim::Failed;
    }
    HttpResult put = http_->put(url, file, record_limits(), true);
    if (put.kind == HttpResult::Kind::PreconditionFailed) return Claim::Taken;
    if (put.kind != HttpResult::Kind::Ok) {
        report(put, "PUT " + url);
        return Claim::Failed;
    }
    held_ = std::make_unique<HeldLease>(HeldLease{&cache, url, lease, SteadyClock::now()});
    // The same conditional PUT again: refused where conditions hold.
    HttpResult again = http_->put(url, file, record_limits(), true);
    if (again.kind == HttpResult::Kind::Ok) {
        warn_(fmt::format(
            "remote cache {} ignores conditional PUTs (If-None-Match); machines that miss the "
            "same key at once each compile it (set $BEKC_REMOTE_WAIT=0 to skip this check)",
            display_url(base_)));
        return Claim::Ignored;
    }
    return Claim::Won;
}

std::optional<Lease> RemoteCache::read_lease(const std::string& url, const Scratch& scratch,
                                             bool& failed) {
    fs::path file = scratch.file("lease-read.json");
    ::unlink(file.c_str());
    HttpResult got = http_->get(url, file, {std::chrono::seconds(2), config_.timeout, 1 << 16});
    failed = false;
    if (got.kind == HttpResult::Kind::NotFound) return std::nullopt;
    if (got.kind != HttpResult::Kind::Ok) {
        report(got, "GET " + url);
        failed = true;
        return std::nullopt;
    }
    auto text = read_file(file, ReadOptions{1 << 16, false});
    auto lease = text ? parse_lease(*text) : std::unexpected(text.error());
    if (!lease) {
        warn_(
            fmt::format("remote cache: ignoring {}: {}", display_url(url), lease.error().message));
        return Lease{Lease::State::Released, "a malformed lease", 0, 0};
    }
    return *lease;
}

RemoteCache::Waited RemoteCache::wait_on_lease(const std::string& url, const Scratch& scratch,
                                               SteadyClock::time_point deadline) {
    static thread_local std::mt19937 random(std::random_device{}());
    std::uniform_real_distribution<double> jitter(0.0, 1.0);
    using End = Waited::End;
    for (int poll = 0;; ++poll) {
        bool failed = false;
        auto lease = read_lease(url, scratch, failed);
        if (failed || !http_) return {End::Failed, {}};
        if (!lease) return {End::Absent, {}};
        if (lease->state == Lease::State::Done) return {End::Done, *lease};
        int64_t left_s = lease->expires - unix_now();
        if (lease->state == Lease::State::Released || left_s <= 0) return {End::Gone, *lease};
        auto now = SteadyClock::now();
        if (now >= deadline) return {End::TimedOut, *lease};
        auto pause =
            std::min({poll_pause(poll, jitter(random)),
                      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now),
                      std::chrono::milliseconds(left_s * 1000)});
        if (!pause_for(pause)) return {End::Failed, *lease};
    }
}

void RemoteCache::end_lease(Lease::State state) {
    if (!held_) return;
    std::unique_ptr<HeldLease> held = std::move(held_);
    if (!http_) return;
    auto scratch = scratch_dir(*held->cache);
    if (!scratch) return;
    held->lease.state = state;
    held->lease.build_ms = ms_since(held->taken);
    fs::path file = scratch->file("lease.json");
    if (!write_atomic(file, render_lease(held->lease))) return;
    // Plain PUT: the lease is this build's own.
    if (HttpResult put = http_->put(held->url, file, record_limits());
        put.kind != HttpResult::Kind::Ok)
        report(put, "PUT " + held->url);
}

}  // namespace bekc
