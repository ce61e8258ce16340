# Helpers that keep every CMakeLists.txt short and uniform.

# phalanx_core_module(NAME SOURCES ... DEPS ...): one static library per core module
# (phalanx_core_<NAME>), all aggregated by the phalanx_core target. Modules build and
# test independently, so a change in one never recompiles the others.
function(phalanx_core_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS" ${ARGN})
  set(t phalanx_core_${name})
  add_library(${t} STATIC ${M_SOURCES})
  target_include_directories(${t} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${t} PUBLIC ${M_DEPS})
  phalanx_set_warnings(${t})
  target_link_libraries(phalanx_core INTERFACE ${t})
endfunction()

# phalanx_add_test(NAME SOURCES ... DEPS ... [LABELS ...] [TIMEOUT s]): a GoogleTest
# executable registered with CTest test by test (discovered when ctest runs). LABELS tsan: one of
# the concurrency-heavy tests `make tsan` builds (target tsan_tests) and runs.
function(phalanx_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  # Sanitized code runs ~2-3x (ASan) and ~5-15x (TSan) slower: the hang deadline scales with it.
  if(PHALANX_SANITIZE STREQUAL "thread")
    math(EXPR T_TIMEOUT "${T_TIMEOUT} * 5")
  elseif(PHALANX_SANITIZE)
    math(EXPR T_TIMEOUT "${T_TIMEOUT} * 3")
  endif()
  add_executable(${name} ${T_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${T_DEPS} GTest::gmock GTest::gtest_main)
  phalanx_set_warnings(${name})
  # Paths are also compiled in: gtest_discover_tests cannot carry a second ENVIRONMENT
  # entry (its `;` splits the property list), and tests run outside ctest need them too.
  target_compile_definitions(${name} PRIVATE
    PHALANX_TEST_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    PHALANX_TEST_BINARY_DIR="${PROJECT_BINARY_DIR}")
  if("tsan" IN_LIST T_LABELS)
    add_dependencies(tsan_tests ${name})
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "PHALANX_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
  # Labels are set after discovery, from the test list it defines: through PROPERTIES a second
  # label (`LABELS extender tsan`) would be split off as a property name and lost.
  if(T_LABELS)
    set(labels_file ${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake)
    file(WRITE ${labels_file} "if(${name}_TESTS)\n"
                              "  set_tests_properties(\${${name}_TESTS} PROPERTIES LABELS \"${T_LABELS}\")\n"
                              "endif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${labels_file})
  endif()
endfunction()

# phalanx_add_bench(NAME SOURCES ... DEPS ...): a Google Benchmark executable (built by
# `make test`, run by hand; see bench/RESULTS.md).
function(phalanx_add_bench name)
  cmake_parse_arguments(B "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${B_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${B_DEPS} benchmark::benchmark)
  phalanx_set_warnings(${name})
endfunction()
