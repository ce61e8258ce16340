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
# executable registered with CTest test by test (discovered when ctest runs).
function(phalanx_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
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
  gtest_discover_tests(${name}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}"
    ENVIRONMENT "PHALANX_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
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
