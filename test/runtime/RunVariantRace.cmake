# The ThreadSanitizer run of make test: libkiln_jit (kiln-stress --jit) compiles
# the torch encoder and a variant pack per shape into a fresh cache, then
# kiln-variant-race, the runtime built with -fsanitize=thread, installs those
# packs while eight threads run the model. OpenMP's runtime is not instrumented:
# host kernels run one thread each here (OMP_NUM_THREADS=1).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${STRESS} ${MODEL} --threads 2 --iterations 4 --dims batch=1,2
                        --dims seq=3,5,7 --jit --cache-dir ${WORK}/cache --backend host
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln-stress --jit failed")
endif()
file(GLOB artifact ${WORK}/cache/model-*.kiln)
file(GLOB packs ${WORK}/cache/variant-*.kvar)
list(LENGTH packs count)
if(NOT count EQUAL 6)
  message(FATAL_ERROR "expected 6 variant packs, found ${count}")
endif()
set(ENV{OMP_NUM_THREADS} 1)
set(ENV{TSAN_OPTIONS} "halt_on_error=1:second_deadlock_stack=1")
execute_process(COMMAND ${RACE} ${artifact} ${packs} --threads 8 --iterations 40
                RESULT_VARIABLE rc TIMEOUT 600)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln-variant-race failed (exit ${rc})")
endif()
