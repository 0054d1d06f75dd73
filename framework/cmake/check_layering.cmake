# The layering of liboar_core, checked by the `layering` test (cmake -DSOURCE_DIR=<repo> -P this file).
# Each subsystem may include the public headers of the subsystems listed for it, and nothing above:
#   core      framework/src/*, framework/include/oar/core   oar/core (tensors, dispatch, op definitions,
#             autograd, plugins' runtime)
#   ir        framework/src/ir, framework/include/oar/ir     oar/core, oar/ir
#   inference framework/src/inference, .../oar/inference    oar/core, oar/ir, oar/inference
# The eager core learns of the subsystems above it only through dispatch hooks (dispatch_hooks.h), which
# one file installs: framework/src/core_hooks.cc, the composition root, exempt from the rule.
cmake_minimum_required(VERSION 3.16)
set(layers core ir inference)
set(allowed_core core)
set(allowed_ir core ir)
set(allowed_inference core ir inference)
set(dirs_core framework/src framework/include/oar/core)
set(dirs_ir framework/src/ir framework/include/oar/ir)
set(dirs_inference framework/src/inference framework/include/oar/inference)
set(exempt framework/src/core_hooks.cc)

set(violations "")
foreach(layer IN LISTS layers)
  foreach(dir IN LISTS dirs_${layer})
    # Only the files directly in `dir`: framework/src's sub-folders are other layers.
    file(GLOB files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/${dir}/*.cc ${SOURCE_DIR}/${dir}/*.h)
    foreach(f IN LISTS files)
      if(f IN_LIST exempt)
        continue()
      endif()
      file(STRINGS ${SOURCE_DIR}/${f} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]oar/(core|ir|inference)/")
      foreach(line IN LISTS includes)
        string(REGEX MATCH "oar/(core|ir|inference)/" m "${line}")
        set(target ${CMAKE_MATCH_1})
        if(NOT target IN_LIST allowed_${layer})
          string(STRIP "${line}" line)
          list(APPEND violations "${f} (${layer}) includes ${target}: ${line}")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()

if(violations)
  list(JOIN violations "\n  " text)
  message(FATAL_ERROR "layering: a subsystem includes one above it (framework/cmake/check_layering.cmake):\n  ${text}")
endif()
message(STATUS "layering: core, ir and inference include only what they may")
