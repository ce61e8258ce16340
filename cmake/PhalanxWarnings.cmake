# Warning flags shared by every Phalanx target (applied through phalanx_set_warnings).
# g++ 12's libstdc++ emits known false positives at -O2 (restrict, stringop-overflow,
# maybe-uninitialized, array-bounds inside std::string/vector/variant); they stay warnings.
function(phalanx_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
  if(PHALANX_WERROR)
    target_compile_options(${target} PRIVATE -Werror
      -Wno-error=restrict -Wno-error=stringop-overflow -Wno-error=maybe-uninitialized
      -Wno-error=array-bounds -Wno-error=stringop-overread -Wno-error=free-nonheap-object)
  endif()
endfunction()
