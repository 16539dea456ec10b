#include "remote/lease.hpp"

#include <unistd.h>

#include <algorithm>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/json_text.hpp"
#include "util/text.hpp"

namespace bekc {

namespace {

constexpr int kLeaseFormat = 1;

struct StateName {
    Lease::State state;
    std::string_view name;
};
constexpr StateName kStates[] = {
    {Lease::State::Building, "building"},
    {Lease::State::Done, "done"},
    {Lease::State::Released, "released"},
};

}  // namespace

std::string render_lease(const Lease& lease) {
    std::string_view state;
    for (const auto& s : kStates)
        if (s.state == lease.state) state = s.name;
    nlohmann::json j = {{"format", kLeaseFormat},
                        {"state", state},
                        {"owner", lease.owner},
                        {"expires", lease.expires},
                        {"build_ms", lease.build_ms}};
    return dump_json(j) + "\n";
}

std::expected<Lease, Error> parse_lease(std::string_view text) {
    auto j = parse_json(text).value_or(nullptr);
    if (!j.is_object() || j.value("format", 0) != kLeaseFormat)
        return fail(ErrorKind::Cache, "not a lease of format 1");
    Lease lease;
    try {
        std::string state = j.at("state").get<std::string>();
        auto known = std::find_if(std::begin(kStates), std::end(kStates),
                                  [&](const StateName& s) { return s.name == state; });
        if (known == std::end(kStates)) return fail(ErrorKind::Cache, "an unknown lease state");
        lease.state = known->state;
        lease.owner = j.at("owner").get<std::string>();
        lease.expires = j.at("expires").get<int64_t>();
        lease.build_ms = j.value("build_ms", uint64_t{0});
    } catch (const nlohmann::json::exception& e) {
        return fail(ErrorKind::Cache, std::string("a malformed lease: ") + e.what());
    }
    if (lease.owner.empty() || lease.owner.size() > 300 || has_control_char(lease.owner))
        return fail(ErrorKind::Cache, "a lease without a printable owner");
    return lease;
}

std::string lease_owner() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0 || has_control_char(host))
        std::snprintf(host, sizeof host, "unknown-host");
    std::random_device random;
    return fmt::format("{} pid {} #{:08x}", host, ::getpid(), random());
}

std::chrono::milliseconds poll_pause(int n, double random) {
    double ms = 200.0;
    for (int i = 0; i < n && ms < 3000.0; ++i) ms *= 1.5;
    ms = std::min(ms, 3000.0);
    return std::chrono::milliseconds(static_cast<int64_t>(ms * (1.0 - 0.25 * random)));
}

}  // namespace bekc
