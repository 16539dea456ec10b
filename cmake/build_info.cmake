# Writes OUT, a C++ source that defines bekc::cli::kBuildCommit: the commit of
# SOURCE_DIR's git checkout (12 hex digits, "-dirty" when tracked files
# differ from it), or "unknown" when it is none (a wheel or sdist build) or
# git is missing. The file is rewritten only when its text changes, so a
# build from the same commit relinks nothing.
#   cmake -DSOURCE_DIR=<dir> -DOUT=<file> -P build_info.cmake
set(commit "unknown")
find_program(BEKC_GIT git)
if(BEKC_GIT)
  execute_process(COMMAND ${BEKC_GIT} -C ${SOURCE_DIR} rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE head RESULT_VARIABLE failed
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  # Only SOURCE_DIR's own checkout, not one of a directory above it.
  execute_process(COMMAND ${BEKC_GIT} -C ${SOURCE_DIR} rev-parse --show-toplevel
                  OUTPUT_VARIABLE top OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  file(REAL_PATH "${SOURCE_DIR}" source_real)
  if(NOT failed AND head MATCHES "^[0-9a-f]+$" AND top)
    file(REAL_PATH "${top}" top_real)
    if(top_real STREQUAL source_real)
      set(commit "${head}")
      execute_process(COMMAND ${BEKC_GIT} -C ${SOURCE_DIR} status --porcelain
                              --untracked-files=no
                      OUTPUT_VARIABLE changes ERROR_QUIET)
      if(changes)
        string(APPEND commit "-dirty")
      endif()
    endif()
  endif()
endif()
set(text "// Written by cmake/build_info.cmake at each build: do not edit.
namespace bekc::cli {
extern const char* const kBuildCommit;
const char* const kBuildCommit = \"${commit}\";
}  // namespace bekc::cli
")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
