# Puts a freshly built kernel (SOURCE) into the build cache folder (FOLDER): copied under a
# hidden name, then renamed, so a concurrent install never takes a half-written file. Any
# failure (a read-only home, a full disk) only leaves the kernel uncached; the build goes on.
string(RANDOM LENGTH 16 _suffix)
get_filename_component(_name "${SOURCE}" NAME)
set(_partial "${FOLDER}/.${_name}.${_suffix}")
execute_process(COMMAND "${CMAKE_COMMAND}" -E make_directory "${FOLDER}"
                RESULT_VARIABLE _made OUTPUT_QUIET ERROR_QUIET)
execute_process(COMMAND "${CMAKE_COMMAND}" -E copy "${SOURCE}" "${_partial}"
                RESULT_VARIABLE _copied OUTPUT_QUIET ERROR_QUIET)
if(_copied EQUAL 0)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E rename "${_partial}" "${FOLDER}/${_name}"
                  RESULT_VARIABLE _renamed OUTPUT_QUIET ERROR_QUIET)
  if(NOT _renamed EQUAL 0)
    execute_process(COMMAND "${CMAKE_COMMAND}" -E remove -f "${_partial}" OUTPUT_QUIET ERROR_QUIET)
  endif()
endif()

# Keep the 8 most recent kernels (one per state of the sources, compiler and Python): while
# someone works on the kernel, each edit adds one.
get_filename_component(_root "${FOLDER}" DIRECTORY)
file(GLOB _entries LIST_DIRECTORIES true "${_root}/*")
set(_dated "")
foreach(_entry IN LISTS _entries)
  if(IS_DIRECTORY "${_entry}")
    file(TIMESTAMP "${_entry}" _when "%Y%m%d%H%M%S" UTC)
    list(APPEND _dated "${_when}|${_entry}")
  endif()
endforeach()
list(SORT _dated ORDER DESCENDING)
list(LENGTH _dated _count)
if(_count GREATER 8)
  list(SUBLIST _dated 8 -1 _old)
  foreach(_item IN LISTS _old)
    string(REGEX REPLACE "^[0-9]+\\|" "" _path "${_item}")
    if(NOT _path STREQUAL FOLDER)
      file(REMOVE_RECURSE "${_path}")
    endif()
  endforeach()
endif()
