# The wheel's install rules, used instead of the tree's when scikit-build-core
# drives CMake (`pip wheel .`, pyproject.toml):
#   <scripts>/bekc                       the binary: pip installs it into the
#                                        environment's bin/, so `bekc` is on PATH
#   <platlib>/bekc/lib/libbekc_numba.so  serves bekc.numba_cuda_kernel
#   <platlib>/bekc/lib/libbekc_lookup.so answers warm loads in-process
#   <platlib>/bekc/share/cmake/bekc/     find_package(bekc): bekcWheelConfig.cmake.in,
#                                        which finds <scripts>/bekc through the wheel's
#                                        RECORD; `python -m bekc --cmakedir` prints it
#   <platlib>/bekc/                      the Python package (scikit-build-core
#                                        copies python/bekc itself)
# The wheel's tag promises glibc BEKC_WHEEL_GLIBC and nothing else, so the
# install step checks both binaries against that promise (check_glibc.cmake).
#
# BEKC_PREBUILT_DIR names a configured and built bekc tree whose two binaries
# are packaged as they are, instead of compiling them again: CI builds build/
# once and its wheel test reuses it.
set(BEKC_WHEEL_GLIBC "" CACHE STRING "The newest glibc the wheel's platform tag allows")
set(BEKC_PREBUILT_DIR "" CACHE PATH "Package this build tree's bekc instead of compiling it")

set(bekc_wheel_lib_dir bekc/lib)
if(BEKC_PREBUILT_DIR)
  load_cache(${BEKC_PREBUILT_DIR} READ_WITH_PREFIX prebuilt_ BEKC_STATIC BEKC_SANITIZE)
  if(NOT prebuilt_BEKC_STATIC OR prebuilt_BEKC_SANITIZE)
    message(FATAL_ERROR "${BEKC_PREBUILT_DIR} was configured with BEKC_STATIC=${prebuilt_BEKC_STATIC} "
                        "BEKC_SANITIZE=${prebuilt_BEKC_SANITIZE}; a wheel needs BEKC_STATIC=ON "
                        "and BEKC_SANITIZE=OFF. Reconfigure it, or leave BEKC_PREBUILT_DIR unset.")
  endif()
  set(bekc_wheel_binary ${BEKC_PREBUILT_DIR}/bekc)
  set(bekc_wheel_numba ${BEKC_PREBUILT_DIR}/libbekc_numba.so)
  set(bekc_wheel_lookup ${BEKC_PREBUILT_DIR}/libbekc_lookup.so)
  foreach(f ${bekc_wheel_binary} ${bekc_wheel_numba} ${bekc_wheel_lookup})
    if(NOT EXISTS ${f})
      message(FATAL_ERROR "${f} is missing: build it (cmake --build ${BEKC_PREBUILT_DIR} "
                          "--target bekc bekc_numba bekc_lookup) or leave BEKC_PREBUILT_DIR unset.")
    endif()
  endforeach()
  install(PROGRAMS ${bekc_wheel_binary} DESTINATION ${SKBUILD_SCRIPTS_DIR})
  install(FILES ${bekc_wheel_numba} ${bekc_wheel_lookup} DESTINATION ${bekc_wheel_lib_dir})
else()
  install(TARGETS bekc RUNTIME DESTINATION ${SKBUILD_SCRIPTS_DIR})
  install(TARGETS bekc_numba bekc_lookup LIBRARY DESTINATION ${bekc_wheel_lib_dir})
endif()

# The CMake package, placed where a prefix of <platlib>/bekc (pyproject.toml's
# "cmake.prefix" entry point) or of the directory itself finds it.
include(CMakePackageConfigHelpers)
set(bekc_wheel_cmake_dir bekc/share/cmake/bekc)
set(bekc_wheel_generated ${CMAKE_BINARY_DIR}/generated/wheel)
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/bekcWheelConfig.cmake.in ${bekc_wheel_generated}/bekcConfig.cmake
  INSTALL_DESTINATION ${bekc_wheel_cmake_dir} INSTALL_PREFIX /site-packages)
write_basic_package_version_file(${bekc_wheel_generated}/bekcConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES ${bekc_wheel_generated}/bekcConfig.cmake ${bekc_wheel_generated}/bekcConfigVersion.cmake
              ${CMAKE_CURRENT_LIST_DIR}/BekcPackage.cmake ${CMAKE_CURRENT_LIST_DIR}/BekcModule.cmake
        DESTINATION ${bekc_wheel_cmake_dir})

set(bekc_wheel_files "${SKBUILD_SCRIPTS_DIR}/bekc"
                     "\${CMAKE_INSTALL_PREFIX}/${bekc_wheel_lib_dir}/libbekc_numba.so"
                     "\${CMAKE_INSTALL_PREFIX}/${bekc_wheel_lib_dir}/libbekc_lookup.so")
if(BEKC_PREBUILT_DIR)  # install(PROGRAMS) is not stripped by `cmake --install --strip`
  foreach(f ${bekc_wheel_files})
    install(CODE "execute_process(COMMAND \"${CMAKE_STRIP}\" --strip-unneeded \"${f}\"
                                  COMMAND_ERROR_IS_FATAL ANY)")
  endforeach()
endif()
install(CODE "
  set(BEKC_FILES \"${bekc_wheel_files}\")
  set(BEKC_GLIBC \"${BEKC_WHEEL_GLIBC}\")
  set(BEKC_READELF \"${CMAKE_READELF}\")
  include(\"${CMAKE_CURRENT_LIST_DIR}/check_glibc.cmake\")
")
