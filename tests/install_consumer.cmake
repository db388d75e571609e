# CTest "install: find_package(hkt) from a separate project": installs the
# build to a fresh prefix, checks what lands there (versioned library, headers
# under include/hkt/, the CMake package, tools that find the library), then
# configures, builds and runs examples/ as a user's project against it.
#   cmake -DBUILD_DIR=... -DWORK_DIR=... -DEXAMPLES_DIR=... -DCXX_COMPILER=... -DBUILD_TYPE=...
#         -DLIBDIR=lib -DVERSION=0.4.0 -P install_consumer.cmake
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${what} failed (${status}):\n${out}\n${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

function(expect_file path)
  if(NOT EXISTS ${prefix}/${path})
    message(FATAL_ERROR "the install lacks ${path}")
  endif()
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
string(REGEX MATCH "^[0-9]+\\.[0-9]+" soversion ${VERSION})
foreach(path ${LIBDIR}/libhkt.so.${VERSION} ${LIBDIR}/libhkt.so.${soversion} ${LIBDIR}/libhkt.so
             include/hkt/hkt.h include/hkt/engine/tensor.h include/hkt/nn/module.h include/hkt/models/classifier.h
             ${LIBDIR}/cmake/hkt/hktConfig.cmake ${LIBDIR}/cmake/hkt/hktConfigVersion.cmake bin/hkt-train)
  expect_file(${path})
endforeach()
message(STATUS "installed to ${prefix}: libhkt.so.${VERSION} (SONAME libhkt.so.${soversion}), headers, package, tools")

# An installed tool finds the installed library through its RPATH.
run("installed listops-gen --help" ${prefix}/bin/listops-gen --help)

run("configure examples/" ${CMAKE_COMMAND} -S ${EXAMPLES_DIR} -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
string(REGEX MATCH "hkt [0-9.]+ from [^\n]*" found "${output}")
message(STATUS "examples/: ${found}")
if(NOT found MATCHES "from ${prefix}/")
  message(FATAL_ERROR "examples/ did not find hkt in ${prefix}:\n${output}")
endif()
run("build examples/" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run("run api-example" ${WORK_DIR}/build/api-example)
message(STATUS "api-example (built against the install): ${output}")
if(NOT output MATCHES "^loss [0-9]")
  message(FATAL_ERROR "api-example printed something else:\n${output}")
endif()
