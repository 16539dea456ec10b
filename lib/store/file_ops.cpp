#include "store/file_ops.hpp"

#include <sys/stat.h>

#include <chrono>

namespace bekc {

namespace {

int64_t to_ns(const timespec& t) {
    return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

}  // namespace

std::optional<FileStat> stat_file(const fs::path& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return std::nullopt;
    return file_stat_of(st);
}

std::optional<DirStamp> dir_stamp(const char* path) {
    struct stat st;
    if (::lstat(path, &st) != 0) return std::nullopt;
    return dir_stamp_of(st);
}

std::optional<DirStamp> dir_stamp_of(const struct stat& st) {
    if (!S_ISDIR(st.st_mode)) return std::nullopt;
    return DirStamp{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                    to_ns(st.st_mtim), to_ns(st.st_ctim)};
}

FileStat file_stat_of(const struct stat& st) {
    return FileStat{static_cast<uint64_t>(st.st_size), to_ns(st.st_mtim), to_ns(st.st_ctim),
                    S_ISREG(st.st_mode)};
}

int64_t now_ns() {
    using namespace std::chrono;
    return duration_cast<nanoseconds>(system_clock::now().time_since_epoch()).count();
}

}  // namespace bekc
