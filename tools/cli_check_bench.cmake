# ctest helper for the `polysci bench` smoke tests (cmake -P):
#   -DCLI=<polysci> -DARGS="bench|conv|...|--csv|<file>" -DCSV=<file> -DHEADER=<first line>
#   -DROWS=<data rows expected> [-DDIST=<file> -DDIST_HEADER=<first line>]
# Runs the command (exit status must be 0), then checks the CSV's header line
# exactly and its number of data rows; the same for the --dist file if given.
foreach(v CLI ARGS CSV HEADER ROWS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "cli_check_bench.cmake: -D${v}=... missing")
  endif()
endforeach()
string(REPLACE "|" ";" _args "${ARGS}")
file(REMOVE "${CSV}")
if(DEFINED DIST)
  file(REMOVE "${DIST}")
endif()
execute_process(COMMAND "${CLI}" ${_args} RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "polysci ${ARGS} exited with ${_rc}")
endif()

function(check_csv file header min_rows exact)
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "${file} was not written")
  endif()
  file(STRINGS "${file}" _lines)
  list(LENGTH _lines _n)
  if(_n LESS 1)
    message(FATAL_ERROR "${file} is empty")
  endif()
  list(GET _lines 0 _first)
  if(NOT _first STREQUAL header)
    message(FATAL_ERROR "${file}: header is\n  ${_first}\nexpected\n  ${header}")
  endif()
  math(EXPR _rows "${_n} - 1")
  if((exact AND NOT _rows EQUAL min_rows) OR _rows LESS min_rows)
    message(FATAL_ERROR "${file}: ${_rows} data rows, expected ${min_rows}")
  endif()
  message(STATUS "${file}: header OK, ${_rows} data rows")
endfunction()

check_csv("${CSV}" "${HEADER}" ${ROWS} TRUE)
if(DEFINED DIST)
  check_csv("${DIST}" "${DIST_HEADER}" ${ROWS} FALSE) # at least one variant per layer
endif()
