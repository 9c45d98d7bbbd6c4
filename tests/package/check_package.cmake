# SPDX-License-Identifier: Apache-2.0
# Installs the built library into a scratch prefix, then builds and runs a
# small consumer twice: once found with find_package(cuabi CONFIG), once with
# pkg-config. Run by ctest as a script (cmake -P), see tests/CMakeLists.txt.
#   -DSOURCE_DIR -DBUILD_DIR -DWORK_DIR -DFAKE_DRIVER -DC_COMPILER
cmake_minimum_required(VERSION 3.20)

set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(RUN_OUTPUT "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
foreach(f include/cuabi.h include/cuabi/driver_types.h include/cuabi/driver_functions.h
          include/cuabi/compat/cuda.h share/cuabi/driver_api.json share/cuabi/cuabi_cdef.h
          share/cuabi/rust/Cargo.toml share/cuabi/rust/src/lib.rs share/cuabi/go/cuabi.go
          share/cuabi/go/go.mod share/lua/5.1/cuabi.lua)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
# Data files are not headers: nothing but headers under include/.
foreach(f include/cuabi/driver_api.json include/cuabi/cuabi_cdef.h)
  if(EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "installed under include/, where only headers belong: ${f}")
  endif()
endforeach()
file(GLOB libs "${prefix}/lib*/libcuabi.so.1")
if(NOT libs)
  message(FATAL_ERROR "libcuabi.so.1 was not installed under ${prefix}")
endif()

# 1. CMake package.
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/package" -B "${WORK_DIR}/cmake-build"
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build "${WORK_DIR}/cmake-build")
run(${CMAKE_COMMAND} -E env CUABI_LIBCUDA=${FAKE_DRIVER} "${WORK_DIR}/cmake-build/consumer")
message(STATUS "find_package(cuabi CONFIG): ${RUN_OUTPUT}")
if(NOT RUN_OUTPUT MATCHES "driver 13000")
  message(FATAL_ERROR "the CMake-built consumer did not reach the driver: ${RUN_OUTPUT}")
endif()
run(${CMAKE_COMMAND} -E env CUABI_LIBCUDA=${FAKE_DRIVER} "${WORK_DIR}/cmake-build/compat_consumer")
message(STATUS "cuabi::compat: ${RUN_OUTPUT}")
if(NOT RUN_OUTPUT MATCHES "saxpy on [0-9]+ elements: correct")
  message(FATAL_ERROR "the program built through cuabi::compat did not run: ${RUN_OUTPUT}")
endif()

# 2. pkg-config.
find_program(PKG_CONFIG pkg-config REQUIRED)
file(GLOB pcdirs "${prefix}/lib*/pkgconfig")
# Only cuabi's own .pc file is visible: a consumer needs no libffi.pc (libffi is
# a private dependency of the shared library).
run(${CMAKE_COMMAND} -E env PKG_CONFIG_LIBDIR=${pcdirs} PKG_CONFIG_PATH= ${PKG_CONFIG} --cflags --libs cuabi)
string(STRIP "${RUN_OUTPUT}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
foreach(var driver_api_json cdef_header rust_crate go_package lua_module compatincludedir)
  run(${CMAKE_COMMAND} -E env PKG_CONFIG_LIBDIR=${pcdirs} PKG_CONFIG_PATH= ${PKG_CONFIG} --variable=${var} cuabi)
  string(STRIP "${RUN_OUTPUT}" path)
  if(path STREQUAL "" OR NOT EXISTS "${path}")
    message(FATAL_ERROR "pkg-config's ${var} points nowhere: '${path}'")
  endif()
endforeach()
run(${C_COMPILER} -std=c11 -Wall -Wextra -Werror "${SOURCE_DIR}/tests/package/consumer.c"
    ${flags} -o "${WORK_DIR}/consumer-pc")
get_filename_component(libdir "${libs}" DIRECTORY)
run(${CMAKE_COMMAND} -E env CUABI_LIBCUDA=${FAKE_DRIVER} LD_LIBRARY_PATH=${libdir} "${WORK_DIR}/consumer-pc")
message(STATUS "pkg-config: ${RUN_OUTPUT}")
if(NOT RUN_OUTPUT MATCHES "driver 13000")
  message(FATAL_ERROR "the pkg-config-built consumer did not reach the driver: ${RUN_OUTPUT}")
endif()
