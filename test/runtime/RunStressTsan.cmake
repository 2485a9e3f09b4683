# kiln-stress built with ThreadSanitizer over the JIT's and the runtime's
# sources: 16 threads on 6 shapes of the torch encoder, a cold cache, variants
# compiled and installed while the threads run. OpenMP's runtime is not
# instrumented: host kernels run one thread each here (OMP_NUM_THREADS=1). The
# suppressions file names none (stress-tsan.supp).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(ENV{OMP_NUM_THREADS} 1)
set(ENV{TSAN_OPTIONS} "halt_on_error=1:second_deadlock_stack=1:suppressions=${SUPPRESSIONS}")
execute_process(COMMAND ${STRESS} ${MODEL} --threads 16 --iterations 10 --dims batch=1,2
                        --dims seq=3,5,7 --jit --cache-dir ${WORK}/cache --backend host
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 900)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln-stress under ThreadSanitizer failed (exit ${rc})")
endif()
if(NOT out MATCHES "stress: 160 runs, 0 mismatches, 0 errors, 7 compiles, 6 variants")
  message(FATAL_ERROR "kiln-stress under ThreadSanitizer: unexpected summary")
endif()
