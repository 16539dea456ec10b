#include "run/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "util/error.hpp"

namespace bekc {

namespace {

// Far more than -j ever runs at once; a child that finds no free slot is
// still stopped by its parent-death signal when bekc exits.
constexpr size_t kSlots = 1024;
std::array<std::atomic<pid_t>, kSlots> g_groups{};
std::atomic<int> g_signal{0};
std::atomic<bool> g_installed{false};

constexpr int kHandled[] = {SIGINT, SIGTERM, SIGHUP};

// Async-signal-safe: atomics and kill(2) only. SIGTERM lets the compilers
// remove their own temporary files; a child that ignores it is killed a
// moment later by the thread waiting for it (run/process.cpp).
void stop_all(int sig) {
    int none = 0;
    g_signal.compare_exchange_strong(none, sig);
    for (auto& slot : g_groups) {
        pid_t pgid = slot.load();
        if (pgid > 0) ::kill(-pgid, SIGTERM);
    }
}

extern "C" void on_signal(int sig) {
    int saved = errno;
    stop_all(sig);
    errno = saved;
}

}  // namespace

void install_interrupt_handlers() {
    if (g_installed.exchange(true)) return;
    for (int sig : kHandled) {
        struct sigaction old {};
        ::sigaction(sig, nullptr, &old);
        // A signal ignored by whoever started bekc (nohup) stays ignored.
        if (old.sa_handler == SIG_IGN) continue;
        struct sigaction sa {};
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        // No SA_RESTART: a blocking call returns EINTR and bekc looks at why.
        ::sigaction(sig, &sa, nullptr);
    }
}

int interrupted_by() {
    return g_signal.load();
}

std::expected<void, Error> check_interrupted() {
    int sig = interrupted_by();
    if (sig == 0) return {};
    Error e =
        Error::make(ErrorKind::Interrupted, std::string("interrupted by ") + sigabbrev_np(sig));
    e.signal = sig;
    return std::unexpected(std::move(e));
}

void die_if_interrupted() {
    int sig = interrupted_by();
    if (sig == 0) return;
    ::signal(sig, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
    ::raise(sig);
}

bool register_child_group(pid_t pgid) {
    for (auto& slot : g_groups) {
        pid_t free = 0;
        if (slot.compare_exchange_strong(free, pgid)) break;
    }
    // A signal that came between the spawn and the registration missed it.
    return interrupted_by() == 0;
}

void unregister_child_group(pid_t pgid) {
    for (auto& slot : g_groups) {
        pid_t mine = pgid;
        if (slot.compare_exchange_strong(mine, 0)) return;
    }
}

}  // namespace bekc
