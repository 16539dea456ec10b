#include "toolchain/gpu_detect.hpp"

#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "store/hash.hpp"
#include "store/json_memo.hpp"
#include "store/layout.hpp"

namespace bekc {

namespace {

// Changes when the driver or the set of GPUs changes.
std::optional<std::string> driver_fingerprint(const fs::path& proc_driver) {
    std::error_code ec;
    auto version = read_file(proc_driver / "version");
    if (!version) return std::nullopt;
    // Each GPU's information file names its model, so two machines sharing a
    // cache with the same driver and slots but different GPUs differ; the
    // host name guards against the rest.
    std::vector<std::string> gpus;
    for (const auto& e : fs::directory_iterator(proc_driver / "gpus", ec))
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

GpuDetection detect_gpus(const fs::path& cache_root, Runner& runner, const ToolLookup& tools,
                         const fs::path& proc_driver) {
    auto fingerprint = driver_fingerprint(proc_driver);
    if (!fingerprint) return {{}, "no NVIDIA driver (" + proc_driver.string() + " is missing)"};
    JsonMemo memo(cache_root, CacheLayout::gpu_memo());
    // A damaged memo is only a reason to ask nvidia-smi again.
    auto j = memo.read([](const std::string& key, const nlohmann::json& value) {
        if (key == "fingerprint") return value.is_string();
        if (key != "archs" || !value.is_array()) return false;
        return std::all_of(value.begin(), value.end(), [](auto& a) { return a.is_string(); });
    });
    if (j.value("fingerprint", "") == *fingerprint && j.contains("archs")) {
        std::string list;
        for (const auto& a : j["archs"]) list += a.get<std::string>() + "\n";
        return {parse_compute_caps(list), "remembered from nvidia-smi"};
    }
    auto smi = tools.find("nvidia-smi");
    if (!smi) return {{}, "nvidia-smi not found on PATH"};
    Command c;
    c.argv = {smi->string(), "--query-gpu=compute_cap", "--format=csv,noheader"};
    ParallelOptions limit;
    limit.run.timeout = std::chrono::seconds(20);
    auto results = runner.run({c}, 1, {}, limit);
    ProcessResult r = results.empty() ? ProcessResult{} : results.front();
    if (!r.ok()) return {{}, "nvidia-smi failed: " + r.describe()};
    GpuDetection d{parse_compute_caps(r.output), "nvidia-smi"};
    nlohmann::json archs = nlohmann::json::array();
    for (const auto& a : d.archs)
        archs.push_back(std::to_string(a.number / 10) + "." + std::to_string(a.number % 10) +
                        a.suffix);
    // A read-only cache still builds; it only asks nvidia-smi again next time.
    memo.write(nlohmann::json{{"fingerprint", *fingerprint}, {"archs", archs}});
    return d;
}

}  // namespace bekc
