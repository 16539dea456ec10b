# bekc_add_module() and bekc_install_module(): build kernel modules with bekc
# from a CMake project. Loaded by bekcConfig.cmake (find_package(bekc)); a
# project that builds bekc itself can include() this file after setting
# BEKC_EXECUTABLE to a path, an executable target's name (`bekc`) or a
# generator expression such as $<TARGET_FILE:bekc>.
#
#   bekc_add_module(<name>
#       SOURCES <file|dir>...              kernel sources (.cu, .cpp, .cc, .cxx)
#       [ARCH sm_90 ...]                   --arch, joined with commas
#       [FAST_MATH]                        --fast-math
#       [OPT_LEVEL 0|1|2|3]                -O<n> (bekc's default: 3)
#       [STD c++17]                        --std
#       [INCLUDE_DIRECTORIES <dir>...]     -I (relative to the current source dir)
#       [DEFINITIONS NAME[=VALUE]...]      -D
#       [TARGET_PREFIX <prefix>]           --target-prefix (default: the module name)
#       [MODULE_NAME <module>]             --name (default: <name>)
#       [OUTPUT_DIR <dir>]                 -o (default: <current binary dir>/bekc/<name>)
#       [CACHE_DIR <dir>]                  --cache-dir (default: bekc's own rule)
#       [NO_CUDA_GRAPH]                    --no-cuda-graph
#       [OPTIONS <bekc build option>...]   passed as they are, last
#       [DEPENDS <file|target>...]         extra dependencies of the build step
#       [EXCLUDE_FROM_ALL])
#
# At build time this runs, without a shell,
#
#   bekc build <SOURCES> --name <module> -o <OUTPUT_DIR>
#              --depfile <OUTPUT_DIR>/<module>.d [options]
#
# as an add_custom_command() whose OUTPUT is <OUTPUT_DIR>/manifest.json and
# whose DEPFILE is the rule bekc writes (every input and every user header it
# includes), under an add_custom_target(<name> ALL). Editing a source or an
# included header therefore reruns bekc; bekc's cache decides whether anything
# is compiled.
#
# Results, for use in the rest of the project:
#   target properties of <name>: BEKC_MANIFEST, BEKC_LIBRARY, BEKC_OUTPUT_DIR,
#     BEKC_MODULE_NAME, BEKC_TARGET_PREFIX
#     (e.g. $<TARGET_PROPERTY:<name>,BEKC_MANIFEST> in add_test())
#   variables in the caller's scope: <name>_MANIFEST, <name>_LIBRARY,
#     <name>_OUTPUT_DIR
#
#   bekc_install_module(<name> DESTINATION <dir> [COMPONENT <component>])
# installs the module's library and manifest side by side (the manifest names
# the library by a relative path, so the pair can go anywhere).

include_guard(GLOBAL)

# The command runs without a shell; DEPFILE needs CMP0116 (Ninja rewrites the
# depfile's paths) whatever the calling project's own policy settings are.
cmake_policy(PUSH)
cmake_policy(VERSION 3.20...3.25)

function(bekc_add_module name)
  set(options FAST_MATH NO_CUDA_GRAPH EXCLUDE_FROM_ALL)
  set(one_value OUTPUT_DIR TARGET_PREFIX MODULE_NAME OPT_LEVEL STD CACHE_DIR)
  set(multi_value SOURCES ARCH OPTIONS INCLUDE_DIRECTORIES DEFINITIONS DEPENDS)
  cmake_parse_arguments(PARSE_ARGV 1 arg "${options}" "${one_value}" "${multi_value}")

  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "bekc_add_module(${name}): unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "bekc_add_module(${name}): SOURCES is required (the .cu/.cpp kernel files)")
  endif()
  if(NOT BEKC_EXECUTABLE)
    message(FATAL_ERROR "bekc_add_module(${name}): BEKC_EXECUTABLE is not set; "
                        "call find_package(bekc CONFIG REQUIRED) first")
  endif()

  set(module "${name}")
  if(arg_MODULE_NAME)
    set(module "${arg_MODULE_NAME}")
  endif()
  if(NOT module MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "bekc_add_module(${name}): the module name '${module}' must be a C++ "
                        "identifier (it names libNAME.so and the FFI targets); "
                        "give MODULE_NAME <identifier>")
  endif()

  set(out "${CMAKE_CURRENT_BINARY_DIR}/bekc/${name}")
  if(arg_OUTPUT_DIR)
    get_filename_component(out "${arg_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  endif()
  set(manifest "${out}/manifest.json")
  set(library "${out}/lib${module}.so")
  set(depfile "${out}/${module}.d")

  set(sources)
  foreach(src IN LISTS arg_SOURCES)
    get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND sources "${abs}")
  endforeach()

  set(argv build ${sources} --name ${module} -o ${out} --depfile ${depfile})
  if(arg_TARGET_PREFIX)
    list(APPEND argv "--target-prefix=${arg_TARGET_PREFIX}")
  endif()
  if(DEFINED arg_OPT_LEVEL)
    if(NOT arg_OPT_LEVEL MATCHES "^[0-3]$")
      message(FATAL_ERROR "bekc_add_module(${name}): OPT_LEVEL must be 0, 1, 2 or 3")
    endif()
    list(APPEND argv "-O${arg_OPT_LEVEL}")
  endif()
  if(arg_FAST_MATH)
    list(APPEND argv --fast-math)
  endif()
  if(arg_ARCH)
    list(JOIN arg_ARCH "," arch)
    list(APPEND argv "--arch=${arch}")
  endif()
  if(arg_STD)
    list(APPEND argv "--std=${arg_STD}")
  endif()
  foreach(dir IN LISTS arg_INCLUDE_DIRECTORIES)
    get_filename_component(abs "${dir}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND argv -I "${abs}")
  endforeach()
  foreach(def IN LISTS arg_DEFINITIONS)
    list(APPEND argv -D "${def}")
  endforeach()
  if(arg_CACHE_DIR)
    get_filename_component(abs "${arg_CACHE_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
    list(APPEND argv "--cache-dir=${abs}")
  endif()
  if(arg_NO_CUDA_GRAPH)
    list(APPEND argv --no-cuda-graph)
  endif()
  list(APPEND argv ${arg_OPTIONS})

  # The binary itself is a dependency: installing a new bekc reruns the step
  # (a cache hit when nothing that matters changed). A target name (a bekc
  # built in the same project) gives a target- and file-level dependency; a
  # generator expression only the target-level one CMake derives from COMMAND.
  set(tool_dep)
  if(TARGET "${BEKC_EXECUTABLE}")
    set(tool_dep "${BEKC_EXECUTABLE}")
  elseif(NOT BEKC_EXECUTABLE MATCHES "\\$<" AND EXISTS "${BEKC_EXECUTABLE}")
    set(tool_dep "${BEKC_EXECUTABLE}")
  endif()

  add_custom_command(
    OUTPUT "${manifest}"
    BYPRODUCTS "${library}"
    COMMAND "${BEKC_EXECUTABLE}" ${argv}
    DEPENDS ${sources} ${tool_dep} ${arg_DEPENDS}
    DEPFILE "${depfile}"
    COMMENT "bekc: building module ${module}"
    VERBATIM)

  set(all ALL)
  if(arg_EXCLUDE_FROM_ALL)
    set(all)
  endif()
  add_custom_target(${name} ${all} DEPENDS "${manifest}" SOURCES ${sources})
  set_target_properties(${name} PROPERTIES
    BEKC_MANIFEST "${manifest}"
    BEKC_LIBRARY "${library}"
    BEKC_OUTPUT_DIR "${out}"
    BEKC_MODULE_NAME "${module}")
  if(arg_TARGET_PREFIX)
    set_target_properties(${name} PROPERTIES BEKC_TARGET_PREFIX "${arg_TARGET_PREFIX}")
  else()
    set_target_properties(${name} PROPERTIES BEKC_TARGET_PREFIX "${module}")
  endif()

  set(${name}_MANIFEST "${manifest}" PARENT_SCOPE)
  set(${name}_LIBRARY "${library}" PARENT_SCOPE)
  set(${name}_OUTPUT_DIR "${out}" PARENT_SCOPE)
endfunction()

function(bekc_install_module name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "DESTINATION;COMPONENT" "")
  if(NOT arg_DESTINATION)
    message(FATAL_ERROR "bekc_install_module(${name}): DESTINATION is required")
  endif()
  if(NOT TARGET ${name})
    message(FATAL_ERROR "bekc_install_module(${name}): no bekc_add_module(${name}) before")
  endif()
  get_target_property(manifest ${name} BEKC_MANIFEST)
  get_target_property(library ${name} BEKC_LIBRARY)
  set(component)
  if(arg_COMPONENT)
    set(component COMPONENT ${arg_COMPONENT})
  endif()
  install(FILES "${library}" DESTINATION "${arg_DESTINATION}"
          PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                      WORLD_READ WORLD_EXECUTE
          ${component})
  install(FILES "${manifest}" DESTINATION "${arg_DESTINATION}" ${component})
endfunction()

cmake_policy(POP)
