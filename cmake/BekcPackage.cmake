# The part of bekc's CMake package that does not depend on where it is
# installed, included by bekcConfig.cmake once it has set
# BEKC_INSTALLED_EXECUTABLE (the binary of this installation): the imported
# target bekc::bekc, BEKC_EXECUTABLE and bekc_add_module().

if(NOT TARGET bekc::bekc)
  add_executable(bekc::bekc IMPORTED)
  set_target_properties(bekc::bekc PROPERTIES IMPORTED_LOCATION "${BEKC_INSTALLED_EXECUTABLE}")
endif()
if(NOT BEKC_EXECUTABLE)
  set(BEKC_EXECUTABLE "${BEKC_INSTALLED_EXECUTABLE}")
endif()

include("${CMAKE_CURRENT_LIST_DIR}/BekcModule.cmake")
