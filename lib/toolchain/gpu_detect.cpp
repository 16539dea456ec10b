#include "toolchain/gpu_detect.hpp"

#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "run/process.hpp"
#include "toolchain/tools.hpp"
#include "store/cache.hpp"
#include "store/hash.hpp"

namespace bekc {

namespace {

constexpr const char* kProcDriver = "/proc/driver/nvidia";

// Changes when the driver or the set of GPUs changes.
std::optional<std::string> driver_fingerprint() {
    std::error_code ec;
    auto version = read_file(fs::path(kProcDriver) / "version");
    if (!version) return std::nullopt;
    // Each GPU's information file names its model, so two machines sharing a
    // cache with the same driver and slots but different GPUs differ; the
    // host name guards against the rest.
    std::vector<std::string> gpus;
    for (const auto& e : fs::directory_iterator(fs::path(kProcDriver) / "gpus", ec))
        gpus.push_back(e.path().filename().string() + "\n" +
                       read_file(e.path() / "information").value_or(""));
    std::sort(gpus.begin(), gpus.end());
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::string all = *version + "\n" + host;
    for (const auto& g : gpus) all += "\n" + g;
    return sha256_hex(all);
}

}  // namespace

GpuDetection detect_gpus(const fs::path& cache_root) {
    auto fingerprint = driver_fingerprint();
    if (!fingerprint) return {{}, "no NVIDIA driver (" + std::string(kProcDriver) + " is missing)"};
    Cache cache(cache_root);
    if (auto text = cache.read_memo(CacheLayout::gpu_memo())) {
        auto j = nlohmann::json::parse(*text, nullptr, false);
        if (j.is_object() && j.value("fingerprint", "") == *fingerprint && j["archs"].is_array()) {
            std::string list;
            bool all_strings = true;
            for (const auto& a : j["archs"]) {
                all_strings &= a.is_string();
                if (a.is_string()) list += a.get<std::string>() + "\n";
            }
            // A damaged memo is only a reason to ask nvidia-smi again.
            if (all_strings) return {parse_compute_caps(list), "remembered from nvidia-smi"};
        }
    }
    auto smi = ToolLookup::system().find("nvidia-smi");
    if (!smi) return {{}, "nvidia-smi not found on PATH"};
    Command c;
    c.argv = {smi->string(), "--query-gpu=compute_cap", "--format=csv,noheader"};
    ProcessResult r = run_process(c, RunOptions{std::chrono::seconds(20)});
    if (!r.ok()) return {{}, "nvidia-smi failed: " + r.describe()};
    GpuDetection d{parse_compute_caps(r.output), "nvidia-smi"};
    nlohmann::json archs = nlohmann::json::array();
    for (const auto& a : d.archs)
        archs.push_back(std::to_string(a.number / 10) + "." + std::to_string(a.number % 10) +
                        a.suffix);
    // A read-only cache still builds; it only asks nvidia-smi again next time.
    cache.write_memo(CacheLayout::gpu_memo(),
                     nlohmann::json{{"fingerprint", *fingerprint}, {"archs", archs}}.dump());
    return d;
}

}  // namespace bekc
