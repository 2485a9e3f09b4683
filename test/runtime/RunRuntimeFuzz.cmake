# The runtime fuzzers of make test: seeds written by make_fuzz_models.py and
# compiled by this build's kiln-compile, then each fuzzer over a bounded number of
# mutants with a fixed seed (reproducible: rerun the printed command).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
# LeakSanitizer without its scan of thread-local storage: with more than a
# handful of host libraries loaded (each has TLS: the block index), its walk of
# the dynamic TLS vector reads a garbage range and crashes at exit ("Tracer
# caught signal 11", "DTLS ... at 0x768-0x100000186a") after every iteration
# has passed. What only TLS then holds (libgomp's and the pthread keys'
# per-thread blocks) is suppressed in fuzz-lsan.supp.
set(ENV{LSAN_OPTIONS} "use_tls=0:suppressions=${CMAKE_CURRENT_LIST_DIR}/fuzz-lsan.supp")
execute_process(COMMAND ${PYTHON} ${MAKE_MODELS} ${WORK} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make_fuzz_models.py failed")
endif()
file(GLOB models ${WORK}/*.onnx)
set(size_seeds "")
set(edit_seeds "")
foreach(model ${models})
  get_filename_component(stem ${model} NAME_WE)
  execute_process(COMMAND ${COMPILER} ${model} -o ${WORK}/${stem}.kiln --arch none
                          --cache-dir ${WORK}/cache RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "kiln-compile ${model} failed")
  endif()
  if(stem MATCHES "^size_")
    list(APPEND size_seeds ${WORK}/${stem}.kiln)
  else()
    list(APPEND edit_seeds ${WORK}/${stem}.kiln)
  endif()
endforeach()
# One seed with shape buckets: variants whose values, kernels and host
# libraries the artifact fuzzer edits (their code states the values it was
# built for; the loader must refuse a variant that claims others).
execute_process(COMMAND ${COMPILER} ${WORK}/edit_conv.onnx -o ${WORK}/edit_buckets.kiln --arch none
                        --buckets "n=1,2" --cache-dir ${WORK}/cache RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln-compile edit_conv.onnx --buckets failed")
endif()
list(APPEND edit_seeds ${WORK}/edit_buckets.kiln)
file(GLOB file_seeds ${WORK}/seed_*)

function(run_fuzzer mode iterations)
  set(command ${FUZZ} ${mode} --iterations ${iterations} --seed 7 ${ARGN})
  string(REPLACE ";" " " shown "${command}")
  message(STATUS "${shown}")
  execute_process(COMMAND ${command} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "kiln-runtime-fuzz ${mode} crashed or misbehaved (exit ${rc})")
  endif()
endfunction()
run_fuzzer(tensor-files 20000 ${file_seeds})
run_fuzzer(run-sizes 3000 ${size_seeds})
run_fuzzer(artifacts 1500 ${edit_seeds})
