# One static library per layer, compiled against its own headers and those of the layers it links
# only, so that including a header of a layer above fails to build (tests/layers/CMakeLists.txt
# checks that it does).
#
# A layer's include roots are made in the build tree, as Bazel's virtual includes are:
#   <build>/layers/<layer>/public/hipguard/<header>  links to include/hipguard/<header>, for each of
#       the layer's PUBLIC_HEADERS (or to a generated header named by its absolute path): the
#       layer's usage requirement, seen by whatever links it;
#   <build>/layers/<layer>/internal/<layer>  links to src/<layer>, its internal headers (spelled
#       "<layer>/x.h"): seen by the layer itself and the layers above it (HIPGUARD_INTERNAL_ROOTS),
#       and by other targets only through hipguard_internal_headers, as before the split.
# Linking a layer (DEPENDS) is then the only way to see its headers, and the calls of this
# function in src/CMakeLists.txt are the list of layers and their edges.
function(hipguard_layer name)
  cmake_parse_arguments(L "" "" "SOURCES;PUBLIC_HEADERS;DEPENDS" ${ARGN})
  set(root ${PROJECT_BINARY_DIR}/layers/${name})
  file(REMOVE_RECURSE ${root})
  file(MAKE_DIRECTORY ${root}/public/hipguard ${root}/internal)
  foreach(header IN LISTS L_PUBLIC_HEADERS)
    if(NOT IS_ABSOLUTE ${header})  # absolute: generated (the version header)
      set(header ${PROJECT_SOURCE_DIR}/include/hipguard/${header})
    endif()
    if(NOT EXISTS ${header})
      message(FATAL_ERROR "layer ${name}: no ${header}")
    endif()
    get_filename_component(file ${header} NAME)
    file(CREATE_LINK ${header} ${root}/public/hipguard/${file} SYMBOLIC)
    set_property(GLOBAL APPEND PROPERTY HIPGUARD_PUBLIC_HEADERS ${header})
  endforeach()
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${name} ${root}/internal/${name} SYMBOLIC)
  set(internal ${root}/internal)
  foreach(dep IN LISTS L_DEPENDS)
    if(TARGET ${dep})
      get_property(below TARGET ${dep} PROPERTY HIPGUARD_INTERNAL_ROOTS)
      list(APPEND internal ${below})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES internal)
  add_library(hipguard_${name} STATIC ${L_SOURCES})
  set_property(TARGET hipguard_${name} PROPERTY HIPGUARD_INTERNAL_ROOTS ${internal})
  target_include_directories(hipguard_${name} PUBLIC ${root}/public PRIVATE ${internal})
  target_link_libraries(hipguard_${name} PUBLIC ${L_DEPENDS})
  target_compile_options(hipguard_${name} PRIVATE -Wall -Wextra -ffunction-sections -fdata-sections
                         -fvisibility=hidden -fvisibility-inlines-hidden ${HIPGUARD_TLS_MODEL})
endfunction()

# Every header under include/hipguard/ belongs to exactly one layer: one that none lists could be
# included by nobody, one listed twice would be a layer's and another's.
function(hipguard_check_layer_headers)
  file(GLOB headers ${PROJECT_SOURCE_DIR}/include/hipguard/*)
  get_property(listed GLOBAL PROPERTY HIPGUARD_PUBLIC_HEADERS)
  foreach(header IN LISTS headers)
    list(FIND listed ${header} at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${header} belongs to no layer (PUBLIC_HEADERS in src/CMakeLists.txt)")
    endif()
    list(REMOVE_AT listed ${at})
    list(FIND listed ${header} again)
    if(NOT again EQUAL -1)
      message(FATAL_ERROR "${header} is listed by two layers")
    endif()
  endforeach()
endfunction()
