# Builds the seed models with make_model.py, then runs the sanitized importer fuzzer
# over a bounded number of mutants with a fixed seed.
file(MAKE_DIRECTORY ${WORK})
set(seeds "")
foreach(name mlp encoder reshape_zero unnamed_dims control_flow)
  execute_process(COMMAND ${PYTHON} ${MAKE_MODEL} ${name} ${WORK}/${name}.onnx
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "make_model.py ${name} failed")
  endif()
  list(APPEND seeds ${WORK}/${name}.onnx)
endforeach()
# The node tests, where installed, seed the mutants with every op the importer knows.
execute_process(COMMAND ${FUZZ} --cases 4000 ${seeds} ${NODE_TESTS} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the importer crashed or misbehaved on a mutant (exit ${rc})")
endif()
