# CTest "layers: no upward include": every quoted #include of a file in a
# layer's folder must name a folder that layer stands on (the table in
# CMakeLists.txt, "The layers"), or a file beside it. The build enforces the
# same table for the sources it compiles; this also covers headers that no
# source of their own layer includes.
#   cmake -DSOURCE_DIR=... -DLAYERS="engine:engine ops:engine,ops,cuda ..." -P check_layers.cmake
cmake_minimum_required(VERSION 3.25)
separate_arguments(entries UNIX_COMMAND "${LAYERS}")
set(layers)
foreach(entry ${entries})
  string(REPLACE ":" ";" parts ${entry})
  list(GET parts 0 layer)
  list(GET parts 1 sees)
  string(REPLACE "," ";" SEES_${layer} ${sees})
  list(APPEND layers ${layer})
endforeach()

set(checked 0)
set(violations 0)
foreach(layer ${layers})
  file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/${layer}/*.h ${SOURCE_DIR}/${layer}/*.cpp
       ${SOURCE_DIR}/${layer}/*.cu ${SOURCE_DIR}/${layer}/*.cuh)
  foreach(file ${files})
    math(EXPR checked "${checked} + 1")
    get_filename_component(folder ${file} DIRECTORY)
    file(STRINGS ${SOURCE_DIR}/${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
    foreach(line ${lines})
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]*)\".*$" "\\1" header "${line}")
      if(EXISTS ${SOURCE_DIR}/${folder}/${header})
        continue()  # beside the file
      endif()
      string(REGEX MATCH "^[^/]+/" top "${header}")
      string(REPLACE "/" "" top "${top}")
      if(top STREQUAL "" OR NOT top IN_LIST SEES_${layer})
        string(REPLACE ";" ", " allowed "${SEES_${layer}}")
        message(STATUS "${file}: #include \"${header}\", but ${layer}/ stands on ${allowed} only")
        math(EXPR violations "${violations} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations GREATER 0)
  message(FATAL_ERROR "${violations} upward include(s) in ${checked} files")
endif()
string(REPLACE ";" " " layers "${layers}")
message(STATUS "${checked} files in ${layers}: every include stays on its layer or below")
