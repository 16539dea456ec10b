// Times bekc's scanner (`scan_source`) on whole files and prints a table:
//
//   bekc_bench_scan [--runs N] FILE...
//
// Each file is read once, scanned once to warm up, then scanned N times; the
// table shows the median and the fastest run. A file whose scan reports a
// diagnostic fails the benchmark, so a broken generator cannot pass as fast.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "diag/diagnostic.hpp"
#include "scan/scanner.hpp"

namespace {

struct Row {
    std::string file;
    size_t lines = 0;
    size_t bytes = 0;
    size_t functions = 0;
    double median_ms = 0;
    double min_ms = 0;
};

bool read_whole(const std::string& path, std::string& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream ss;
    ss << in.rdbuf();
    out = ss.str();
    return true;
}

// Scans `text` `runs` times; returns false (after printing the diagnostics)
// when the scan reports any.
bool time_file(const std::string& path, const std::string& text, int runs, Row& row) {
    bekc::ScanOptions options;
    options.cuda = bekc::is_cuda_source(path) || !bekc::is_cpu_source(path);
    bekc::ScanResult first = bekc::scan_source(text, path, options);
    if (!first.diagnostics.empty()) {
        std::fputs(bekc::render_all(first.diagnostics).c_str(), stderr);
        return false;
    }
    std::vector<double> ms;
    for (int r = 0; r < runs; ++r) {
        // Give freed memory back first, so that each run pays for fresh pages
        // as a real `bekc build` (one scan per file) does. Without this, glibc
        // reuses the previous run's memory for allocations under its 32 MiB
        // mmap threshold only, which flatters small files and not big ones.
#if defined(__GLIBC__)
        malloc_trim(0);
#endif
        auto t0 = std::chrono::steady_clock::now();
        bekc::ScanResult result = bekc::scan_source(text, path, options);
        auto t1 = std::chrono::steady_clock::now();
        if (result.functions.size() != first.functions.size()) return false;
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    row.file = path;
    row.lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
    row.bytes = text.size();
    row.functions = first.functions.size();
    row.median_ms = ms[ms.size() / 2];
    row.min_ms = ms.front();
    return true;
}

void print_table(const std::vector<Row>& rows) {
    std::printf("| %-28s | %8s | %9s | %9s | %10s | %8s | %8s |\n", "file", "lines", "bytes",
                "functions", "median ms", "min ms", "ns/line");
    std::printf("|%s|%s|%s|%s|%s|%s|%s|\n", "------------------------------", "---------:",
                "----------:", "----------:", "-----------:", "---------:", "---------:");
    for (const auto& r : rows) {
        std::string name = r.file.substr(r.file.find_last_of('/') + 1);
        std::printf("| %-28s | %8zu | %9zu | %9zu | %10.2f | %8.2f | %8.0f |\n", name.c_str(),
                    r.lines, r.bytes, r.functions, r.median_ms, r.min_ms,
                    r.median_ms * 1e6 / static_cast<double>(std::max<size_t>(1, r.lines)));
    }
}

}  // namespace

int main(int argc, char** argv) {
    int runs = 15;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--runs" && i + 1 < argc) {
            runs = std::max(1, std::atoi(argv[++i]));
        } else if (a == "-h" || a == "--help") {
            std::puts("usage: bekc_bench_scan [--runs N] FILE...");
            return 0;
        } else {
            files.push_back(a);
        }
    }
    if (files.empty()) {
        std::fputs("usage: bekc_bench_scan [--runs N] FILE...\n", stderr);
        return 2;
    }
    std::vector<Row> rows;
    for (const auto& f : files) {
        std::string text;
        if (!read_whole(f, text)) {
            std::fprintf(stderr, "%s: error: cannot read\n", f.c_str());
            return 2;
        }
        Row row;
        if (!time_file(f, text, runs, row)) {
            std::fprintf(stderr, "%s: error: the scan reported diagnostics\n", f.c_str());
            return 1;
        }
        rows.push_back(row);
    }
    print_table(rows);
    return 0;
}
