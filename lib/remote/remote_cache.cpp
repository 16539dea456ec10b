// fetch and publish: the order of requests and what is checked between them.
// The wire formats are in remote_record.hpp and entry_archive.hpp, the HTTP
// in http.hpp.
#include "remote/remote_cache.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "remote/entry_archive.hpp"
#include "remote/remote_record.hpp"
#include "store/file_ops.hpp"
#include "store/layout.hpp"
#include "store/target_file.hpp"
#include "toolchain/tools.hpp"
#include "util/fs.hpp"
#include "util/json_text.hpp"

namespace bekc {

namespace {

// A direct record is a few kilobytes; anything near this is not one.
constexpr uint64_t kMaxRecordBytes = 16ull << 20;

// The files of an entry that travel; stamp.json and last-use describe the
// local copy and are rewritten when it is published.
bool travels(const std::string& name, const Entry& entry) {
    return name == kManifestFile || name == kManifestNoGraphFile || name == kDependenciesFile ||
           name == kTargetFile || name == entry.library.filename().string();
}

}  // namespace

RemoteCache::RemoteCache(RemoteConfig config, Warn warn, Runner& runner, const ToolLookup& tools)
    : config_(std::move(config)),
      warn_(std::move(warn)),
      base_(config_.s3 ? s3_base_url(*config_.s3) : config_.url) {
    while (!base_.empty() && base_.back() == '/') base_.pop_back();
    std::string problem = config_.problem;
    std::optional<fs::path> curl;
    if (problem.empty()) {
        curl = tools.find("curl");
        if (!curl) problem = "curl was not found on PATH (Debian: apt-get install curl)";
    }
    if (!problem.empty()) {
        warn_("remote cache disabled: " + problem);
        return;
    }
    http_.emplace(*curl, config_.s3 ? s3_headers(*config_.s3) : bearer_headers(config_.token),
                  runner);
}

std::chrono::seconds lookup_budget(const RemoteConfig& config) {
    return config.timeout * 4;
}

Scratch::~Scratch() {
    if (cache_) cache_->remove(dir_);
}

std::expected<Scratch, Error> scratch_dir(const Cache& cache) {
    auto dir = cache.make_scratch();
    if (!dir) return std::unexpected(dir.error());
    return Scratch(cache, std::move(*dir));
}

std::string RemoteCache::direct_url(const std::string& direct_key) const {
    return base_ + "/direct/" + direct_key + ".json";
}

std::string RemoteCache::portable_url(const std::string& portable_key) const {
    return base_ + "/portable/" + portable_key + ".json";
}

std::string RemoteCache::entry_url(const std::string& key) const {
    return base_ + "/entries/" + key + ".tar";
}

namespace {

HttpLimits within(HttpLimits limits, const std::chrono::steady_clock::time_point* deadline) {
    if (!deadline) return limits;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        *deadline - std::chrono::steady_clock::now());
    limits.total = std::max(std::min(limits.total, left), std::chrono::milliseconds(1));
    return limits;
}

}  // namespace

HttpLimits RemoteCache::record_limits(const Lookup* lookup) const {
    return within({std::chrono::seconds(2), config_.timeout, kMaxRecordBytes},
                  lookup ? &lookup->deadline : nullptr);
}

// Libraries run to tens of megabytes: three times as long as a record.
HttpLimits RemoteCache::entry_limits(const Lookup* lookup) const {
    return within({std::chrono::seconds(2), config_.timeout * 3, config_.max_entry_bytes},
                  lookup ? &lookup->deadline : nullptr);
}

void RemoteCache::report(const HttpResult& result, const std::string& request) {
    if (result.kind == HttpResult::Kind::Unreachable) {
        warn_(fmt::format("remote cache {} is unreachable ({}); not using it for this build",
                          display_url(base_), result.message));
        http_.reset();
        return;
    }
    warn_(fmt::format("remote cache: {} failed: {}", display_url(request), result.message));
}

// The remote's records for `direct_key`. A failed request is reported, and
// so is a malformed document (which the next publish replaces). Within a
// lookup, a request that its time limit cut short is left to fetch to report.
RemoteCache::RemoteRecords RemoteCache::read_records(const std::string& url, const Scratch& scratch,
                                                     Lookup* lookup) {
    using State = RemoteRecords::State;
    fs::path file = scratch.file("direct.json");
    HttpResult got = http_->get(url, file, record_limits(lookup));
    if (got.kind == HttpResult::Kind::NotFound) return {State::Absent, {}};
    if (got.kind != HttpResult::Kind::Ok) {
        if (lookup && lookup->passed())
            lookup->cut_short = "reading the direct record";
        else
            report(got, "GET " + url);
        return {State::Failed, {}};
    }
    auto text = read_file(file, ReadOptions{kMaxRecordBytes, false});
    auto records =
        text ? parse_remote_records(*text)
             : std::expected<std::vector<DirectInputs>, Error>(std::unexpected(text.error()));
    if (!records) {
        warn_(fmt::format("remote cache: ignoring {}: {}", display_url(url),
                          records.error().message));
        return {State::Malformed, {}};
    }
    return {State::Found, std::move(*records)};
}

std::optional<RemoteCache::Fetched> RemoteCache::fetch_from(Cache& cache, const std::string& url,
                                                            const BaseDir& base) {
    if (!http_) return std::nullopt;
    Lookup lookup{std::chrono::steady_clock::now() + lookup_budget(config_), ""};
    auto gave_up = [&]() -> std::optional<Fetched> {
        warn_(fmt::format(
            "remote cache: gave up the lookup: its time limit of {} s ({} x $BEKC_REMOTE_TIMEOUT) "
            "passed while {}; building locally",
            lookup_budget(config_).count(), lookup_budget(config_) / config_.timeout,
            lookup.cut_short));
        return std::nullopt;
    };
    auto scratch = scratch_dir(cache);
    if (!scratch) {
        warn_("remote cache not used: " + scratch.error().message);
        return std::nullopt;
    }
    RemoteRecords remote = read_records(url, *scratch, &lookup);
    if (!lookup.cut_short.empty()) return gave_up();
    if (remote.state != RemoteRecords::State::Found) return std::nullopt;
    // Only a record whose headers are byte for byte ours names our key.
    auto match = match_local_files(remote.records, LocalCheck{lookup.deadline}, base);
    if (!match) {
        lookup.cut_short = match.error().message;
        return gave_up();
    }
    for (const auto& refused : match->refused)
        warn_(fmt::format("remote cache: a record of {} does not match: {}", display_url(url),
                          refused));
    if (!match->record) return std::nullopt;
    const DirectInputs& record = *match->record;
    const std::string key = record.key;
    auto outcome = cache.get_or_build(key, [&](const Staging& staging) {
        return download_entry(key, staging.path(), *scratch, lookup);
    });
    if (!outcome) {
        if (!lookup.cut_short.empty()) return gave_up();
        // An unreachable remote has been reported already.
        if (http_)
            warn_(fmt::format("remote cache entry {} not used: {}; building locally", key,
                              outcome.error().message));
        return std::nullopt;
    }
    return Fetched{record, outcome->entry};
}

std::optional<Entry> RemoteCache::fetch(Cache& cache, const std::string& direct_key,
                                        const BaseDir& base) {
    auto got = fetch_from(cache, direct_url(direct_key), base);
    if (!got) return std::nullopt;
    // The next build of these inputs is a local hit.
    if (auto r = cache.record_direct(direct_key, got->record, base); !r)
        warn_("could not record dependencies for fast hits: " + r.error().message);
    return got->entry;
}

std::optional<Entry> RemoteCache::fetch_portable(Cache& cache, const std::string& portable_key,
                                                 const BaseDir& base,
                                                 const std::function<bool(const Entry&)>& fits) {
    auto got = fetch_from(cache, portable_url(portable_key), base);
    if (!got || !fits(got->entry)) return std::nullopt;
    if (auto r = cache.record_portable(portable_key, got->record, base); !r)
        warn_("could not record the build for hits without a compiler: " + r.error().message);
    return got->entry;
}

std::expected<void, Error> RemoteCache::download_entry(const std::string& key,
                                                       const fs::path& staging,
                                                       const Scratch& scratch, Lookup& lookup) {
    if (!http_) return fail(ErrorKind::Cache, "the remote is unreachable");
    auto cut_short = [&](const std::string& during) {
        lookup.cut_short = during;
        return fail(ErrorKind::Cache, "the lookup's time limit passed while " + during);
    };
    if (lookup.passed()) return cut_short("waiting to download the entry");
    fs::path archive = scratch.file("entry.tar");
    std::string url = entry_url(key);
    HttpResult got = http_->get(url, archive, entry_limits(&lookup));
    if (got.kind != HttpResult::Kind::Ok && got.kind != HttpResult::Kind::NotFound &&
        lookup.passed())
        return cut_short("downloading the entry");
    if (got.kind == HttpResult::Kind::NotFound)
        return fail(ErrorKind::Cache,
                    display_url(url) + " is missing although a direct record names it");
    if (got.kind == HttpResult::Kind::Unreachable) {
        report(got, "GET " + url);  // warns, and fetch stays quiet
        return fail(ErrorKind::Cache, "the remote is unreachable");
    }
    if (got.kind != HttpResult::Kind::Ok)
        return fail(ErrorKind::Cache,
                    fmt::format("GET {} failed: {}", display_url(url), got.message));
    auto names = read_entry_archive(archive, staging,
                                    ArchiveLimits{config_.max_entry_bytes, lookup.deadline});
    if (!names && lookup.passed()) return cut_short("unpacking the entry");
    if (!names) return fail(ErrorKind::Cache, "corrupt archive: " + names.error().message);
    // The archive is no longer needed: a second copy of the entry need not
    // sit on the disk while it is verified.
    ::unlink(archive.c_str());
    // The same checks as a local hit, with the full SHA-256 of the library.
    auto entry = check_entry(CacheDir(staging), "", key, CheckLevel::Full);
    if (!entry) return std::unexpected(entry.error());
    for (const auto& name : *names)
        if (!travels(name, *entry))
            return fail(ErrorKind::Cache, "unexpected file '" + name + "' in the entry");
    // target.json (an entry of an older bekc has none) is what a hit without a
    // compiler believes: it must read as one.
    if (auto text = read_file(staging / kTargetFile, ReadOptions{kMaxRecordBytes, false}))
        if (auto target = parse_target(*text); !target) return std::unexpected(target.error());
    if (auto deps = read_file(staging / kDependenciesFile, ReadOptions{kMaxRecordBytes, false})) {
        auto j = parse_json(*deps).value_or(nullptr);
        if (!j.is_array())
            return fail(ErrorKind::Cache, std::string(kDependenciesFile) + " is not a JSON array");
    }
    // check_entry left a stamp; publishing writes its own.
    std::error_code ec;
    fs::remove(staging / kStampFile, ec);
    return {};
}

void RemoteCache::publish(const Cache& cache, const Entry& entry, const std::string& direct_key,
                          const DirectInputs& local_deps, const BaseDir& base) {
    if (!http_ || config_.read_only) return;
    auto scratch = scratch_dir(cache);
    if (!scratch) {
        warn_("remote cache: not uploading " + entry.key + ": " + scratch.error().message);
        return;
    }
    // The library first and the manifests last, as a build writes them.
    std::vector<std::string> names = {entry.library.filename().string()};
    if (stat_file(entry.dir / kDependenciesFile)) names.emplace_back(kDependenciesFile);
    if (stat_file(entry.dir / kTargetFile)) names.emplace_back(kTargetFile);
    names.emplace_back(kManifestNoGraphFile);
    names.emplace_back(kManifestFile);
    fs::path archive = scratch->file("upload.tar");
    if (auto w = write_entry_archive(entry.dir, names, archive); !w) {
        warn_("remote cache: not uploading " + entry.key + ": " + w.error().message);
        return;
    }
    // Readers refuse an archive over their limit: do not send one.
    if (auto size = stat_file(archive); size && size->size > config_.max_entry_bytes) {
        warn_(fmt::format(
            "remote cache: not uploading {}: its archive is {} bytes, over the limit of {} "
            "($BEKC_REMOTE_MAX_ENTRY_SIZE)",
            entry.key, size->size, config_.max_entry_bytes));
        return;
    }
    // The entry before the record that names it, so a reader who finds the
    // record finds the entry too.
    std::string url = entry_url(entry.key);
    if (HttpResult put = http_->put(url, archive, entry_limits());
        put.kind != HttpResult::Kind::Ok) {
        report(put, "PUT " + url);
        return;
    }
    put_record(cache, direct_url(direct_key), entry, local_deps, base);
    // After the record: a waiter told "done" finds the entry.
    end_lease(Lease::State::Done);
}

void RemoteCache::publish_portable(const Cache& cache, const Entry& entry,
                                   const std::string& portable_key, const DirectInputs& deps,
                                   const BaseDir& base) {
    if (!http_ || config_.read_only) return;
    put_record(cache, portable_url(portable_key), entry, deps, base);
}

void RemoteCache::put_record(const Cache& cache, const std::string& url, const Entry& entry,
                             const DirectInputs& local_deps, const BaseDir& base) {
    if (!http_) return;
    // Paths under the base directory go out relative to it, for checkouts
    // elsewhere to check against their own files.
    DirectInputs deps = local_deps;
    for (auto& d : deps.dependencies) d.path = base.hide(d.path.string());
    for (auto& p : deps.must_not_exist) p = base.hide(p.string());
    auto scratch = scratch_dir(cache);
    if (!scratch) {
        warn_("remote cache: not uploading the record of " + entry.key + ": " +
              scratch.error().message);
        return;
    }
    // Read, merge, write: records other machines made for other header
    // contents stay. A malformed document is replaced.
    RemoteRecords remote = read_records(url, *scratch, nullptr);
    if (remote.state == RemoteRecords::State::Failed) return;
    DirectInputs latest = deps;
    latest.key = entry.key;
    std::string text =
        render_remote_records(merge_remote_records(std::move(remote.records), latest));
    fs::path file = scratch->file("record.json");
    if (auto w = write_atomic(file, text); !w) {
        warn_("remote cache: " + w.error().message);
        return;
    }
    if (HttpResult put = http_->put(url, file, record_limits()); put.kind != HttpResult::Kind::Ok)
        report(put, "PUT " + url);
}

}  // namespace bekc
