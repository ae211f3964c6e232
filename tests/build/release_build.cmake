# cmake -P script for the build.release test (see CMakeLists.txt): configure and build the programs as the image
# does, and fail on any warning: -Werror turns the compiler's into errors; the output is also searched for those
# that -Werror does not cover (the linker's, say).
foreach(var SOURCE_DIR BINARY_DIR GENERATOR CXX_COMPILER BUILD_LAUNCHER BUILD_OPERATOR JOBS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "release_build.cmake: -D${var}=... is missing")
  endif()
endforeach()

execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BINARY_DIR} -G ${GENERATOR}
          -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
          -DCMAKE_BUILD_TYPE=Release -DKUBEDIST_BUILD_TESTS=OFF -DKUBEDIST_WERROR=ON
          -DKUBEDIST_BUILD_LAUNCHER=${BUILD_LAUNCHER} -DKUBEDIST_BUILD_OPERATOR=${BUILD_OPERATOR}
  RESULT_VARIABLE configured)
if(NOT configured EQUAL 0)
  message(FATAL_ERROR "the Release configure failed (${configured})")
endif()

execute_process(
  COMMAND ${CMAKE_COMMAND} --build ${BINARY_DIR} --parallel ${JOBS}
  RESULT_VARIABLE built
  OUTPUT_VARIABLE out ERROR_VARIABLE out ECHO_OUTPUT_VARIABLE ECHO_ERROR_VARIABLE)
if(NOT built EQUAL 0)
  message(FATAL_ERROR "the Release build failed (${built}): see the errors above")
endif()
string(REGEX MATCHALL "[^\n]*[Ww]arning:[^\n]*" warnings "${out}")
if(warnings)
  list(JOIN warnings "\n" text)
  message(FATAL_ERROR "the Release build printed warnings:\n${text}")
endif()

# What the image copies out of its build: both programs when both halves are built.
set(programs)
if(BUILD_LAUNCHER)
  list(APPEND programs launcher-sidecar/kubedist-launcher)
endif()
if(BUILD_OPERATOR)
  list(APPEND programs operator/kubedist-operator)
endif()
foreach(program ${programs})
  if(NOT EXISTS ${BINARY_DIR}/${program})
    message(FATAL_ERROR "the Release build made no ${program}")
  endif()
endforeach()
message(STATUS "Release build of ${BINARY_DIR} is warning-free")
