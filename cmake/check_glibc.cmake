# Checks that each of BEKC_FILES links only glibc's libraries and needs no
# glibc symbol version newer than BEKC_GLIBC (the wheel's manylinux tag), using
# BEKC_READELF. Included by the wheel's install step (cmake/wheel.cmake), so a
# wheel built against a newer glibc fails instead of carrying a wrong tag.
set(bekc_glibc_libraries libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1
                         ld-linux-x86-64.so.2)
if(NOT BEKC_GLIBC)
  message(FATAL_ERROR "BEKC_WHEEL_GLIBC is not set: pyproject.toml sets it with the wheel's tag")
endif()
foreach(file ${BEKC_FILES})
  execute_process(COMMAND "${BEKC_READELF}" -W -d -V "${file}"
                  OUTPUT_VARIABLE elf COMMAND_ERROR_IS_FATAL ANY)
  string(REGEX MATCHALL "\\(NEEDED\\)[^[]*\\[[^]]+\\]" needed "${elf}")
  foreach(entry ${needed})
    string(REGEX REPLACE ".*\\[(.*)\\]" "\\1" lib "${entry}")
    list(FIND bekc_glibc_libraries "${lib}" known)  # install scripts run without IN_LIST
    if(known EQUAL -1)
      message(FATAL_ERROR "${file} needs ${lib}, which is not part of glibc, so the wheel "
                          "would not run where only glibc is present. Build with -DBEKC_STATIC=ON.")
    endif()
  endforeach()
  string(REGEX MATCHALL "Name: GLIBC_[0-9.]+" versions "${elf}")
  set(newest 0)
  foreach(v ${versions})
    string(REPLACE "Name: GLIBC_" "" v "${v}")
    if(v VERSION_GREATER newest)
      set(newest ${v})
    endif()
  endforeach()
  if(newest VERSION_GREATER BEKC_GLIBC)
    message(FATAL_ERROR "${file} needs GLIBC_${newest}, newer than the wheel's tag allows "
                        "(${BEKC_GLIBC}). Build on an older distribution, or raise both "
                        "BEKC_WHEEL_GLIBC and the manylinux tag in pyproject.toml.")
  endif()
  message(STATUS "${file}: glibc only, GLIBC_${newest} at most")
endforeach()
