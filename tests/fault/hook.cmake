# Adds the tests of tests/fault to a build whose tests/CMakeLists.txt does not include it
# (yet):  cmake -DCMAKE_PROJECT_polysci_INCLUDE=<src>/tests/fault/hook.cmake ...
# The presets in CMakePresets.json do this. (include(), because add_subdirectory
# is not allowed in a deferred call.) Runs at the end of the top-level
# CMakeLists.txt; does nothing when tests/CMakeLists.txt already has
# add_subdirectory(fault) or tests are off.
function(_ps_fault_hook)
  if(POLYSCI_BUILD_TESTS AND NOT TARGET test_alloc_failures)
    include(${CMAKE_SOURCE_DIR}/tests/fault/CMakeLists.txt)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL _ps_fault_hook)
