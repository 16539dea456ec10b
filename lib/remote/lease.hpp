// One compile per miss across machines: a lease object in the remote.
//
// When machines miss the same direct key at once, each tries to create
// URL/leases/<direct key>.<generation>.json with a conditional PUT
// (If-None-Match: *). The store lets one create it: that machine compiles,
// publishes, and then marks the lease "done" (or "released" when its build
// failed). The others read the lease and poll it, with backoff, until it is
// done (then they fetch the entry), released or expired (then they try the
// next generation), or until their own bound ($BEKC_REMOTE_WAIT) for that
// builder passes (then they compile, as every machine did before leases).
//
// A lease expires at its writer's time plus the bound, so a builder that
// dies or stalls holds the others back no longer than the bound; and each
// waiter also stops at its own bound by its own clock, so a clock that is
// wrong elsewhere can make it stop early, never wait longer. Generations
// mean a lease is never overwritten by another machine and never deleted:
// taking over an expired lease is creating the next one, which again only
// one machine can do.
//
// A store that ignores If-None-Match (nginx's WebDAV PUT) is found out at
// once: right after the lease is created, the same conditional PUT is sent
// again, and a store that honours it refuses it. On one that does not,
// bekc warns and every machine compiles, as before.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

#include "util/error.hpp"

namespace bekc {

struct Lease {
    enum class State { Building, Done, Released };
    State state = State::Building;
    // "host pid nonce": who holds it, for messages.
    std::string owner;
    // Seconds since the epoch, by the writer's clock: after this, the lease
    // is taken over.
    int64_t expires = 0;
    // Done: milliseconds from taking the lease to marking it done.
    uint64_t build_ms = 0;
};

// The lease object's text, and back. Anything but a lease of format 1 with
// a known state and a printable owner is an error (and a waiter treats it
// as expired).
std::string render_lease(const Lease& lease);
std::expected<Lease, Error> parse_lease(std::string_view text);

// This process as a lease's owner: the host name, the pid and a random
// nonce, so two processes never write the same owner.
std::string lease_owner();

// The pause before poll `n` (0, 1, ...): from 200 ms growing by half each
// time to 3 s, with up to 25% random jitter from `random` (0..1), so
// machines that started together do not poll together.
std::chrono::milliseconds poll_pause(int n, double random);

// The most generations a build tries before it compiles anyway: the most
// builders it waits for one after the other, each at most the bound.
inline constexpr int kMaxLeaseGenerations = 4;

}  // namespace bekc
