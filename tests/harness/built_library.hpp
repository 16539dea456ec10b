// Builds a kernel file with the real `bekc` binary into a private cache
// directory, loads the library with dlopen and reads its manifest, as a
// loader would.
#pragma once

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "bekc/xla_ffi_abi.h"

namespace harness {

namespace fs = std::filesystem;

struct ProcessResult {
    int exit_code = -1;
    std::string out;  // stdout; stderr goes to a file named in `err_file`
    std::string err;
};

// Runs argv[0] with arguments, no shell; captures stdout and stderr.
inline ProcessResult run_process(const std::vector<std::string>& argv, const fs::path& scratch) {
    fs::path out = scratch / "stdout.txt", err = scratch / "stderr.txt";
    pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0) _exit(126);
        dup2(o, 1);
        dup2(e, 2);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    auto slurp = [](const fs::path& p) {
        std::ifstream in(p, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    ProcessResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
}

class TempDirectory {
public:
    TempDirectory() {
        const char* base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/bekc-harness-XXXXXX";
        if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed: " + tmpl);
        path_ = tmpl;
    }
    ~TempDirectory() {
        if (std::getenv("BEKC_HARNESS_KEEP")) return;
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

private:
    fs::path path_;
};

struct Target {
    std::string name, symbol, function, platform, source;
    int num_args = 0, num_rets = 0;
    bool command_buffer_compatible = false;
    std::vector<std::pair<std::string, std::string>> attrs;  // name, type
};

// One library built by bekc, loaded for the life of the process.
class BuiltLibrary {
public:
    BuiltLibrary(const std::string& bekc, const fs::path& source,
                 const std::vector<std::string>& extra_flags = {}) {
        std::vector<std::string> argv = {bekc,          "build", source.string(),
                                         "--cache-dir", (tmp_.path() / "cache").string(),
                                         "--json",      "-q"};
        argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
        ProcessResult r = run_process(argv, tmp_.path());
        if (r.exit_code != 0)
            throw std::runtime_error("bekc build " + source.string() + " failed (exit " +
                                     std::to_string(r.exit_code) + "):\n" + r.err + r.out);
        nlohmann::json result = nlohmann::json::parse(r.out);
        manifest_path_ = result.at("manifest").get<std::string>();
        std::ifstream in(manifest_path_);
        manifest_ = nlohmann::json::parse(in);
        library_path_ = manifest_path_.parent_path() / manifest_.at("library").get<std::string>();
        if (library_path_ != fs::path(result.at("library").get<std::string>()))
            throw std::runtime_error("bekc --json and the manifest name different libraries");
        handle_ = dlopen(library_path_.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle_) throw std::runtime_error(std::string("dlopen: ") + dlerror());
        for (const auto& t : manifest_.at("targets")) {
            Target target;
            target.name = t.at("name");
            target.symbol = t.at("symbol");
            target.function = t.at("function");
            target.platform = t.at("platform");
            target.source = t.at("source");
            target.num_args = t.at("num_args");
            target.num_rets = t.at("num_rets");
            target.command_buffer_compatible = t.at("command_buffer_compatible");
            for (const auto& a : t.at("attrs")) target.attrs.emplace_back(a.at("name"), a.at("type"));
            targets_[target.function] = target;
        }
    }
    ~BuiltLibrary() {
        if (handle_) dlclose(handle_);
    }
    BuiltLibrary(const BuiltLibrary&) = delete;
    BuiltLibrary& operator=(const BuiltLibrary&) = delete;

    const nlohmann::json& manifest() const { return manifest_; }
    const fs::path& library_path() const { return library_path_; }
    const std::map<std::string, Target>& targets() const { return targets_; }
    const Target& target(const std::string& function) const { return targets_.at(function); }

    // The handler symbol, or nullptr when the library lacks it.
    BekcXla_Handler* find(const std::string& symbol) const {
        return reinterpret_cast<BekcXla_Handler*>(dlsym(handle_, symbol.c_str()));
    }
    // The handler the manifest names for `function`; throws when missing.
    BekcXla_Handler* handler(const std::string& function) const {
        BekcXla_Handler* h = find(target(function).symbol);
        if (!h) throw std::runtime_error("no symbol " + target(function).symbol);
        return h;
    }

private:
    TempDirectory tmp_;
    fs::path manifest_path_, library_path_;
    nlohmann::json manifest_;
    void* handle_ = nullptr;
    std::map<std::string, Target> targets_;
};

}  // namespace harness
