# Compiles the torch models to .so files and runs tools/gpu/bench.py on them in
# host emulation, two runs each and no baselines: a smoke test of the script the
# GPU machine runs (tools/gpu-check.sh), not a measurement.
file(MAKE_DIRECTORY ${OUT})
foreach(model mlp cnn encoder)
  execute_process(COMMAND ${KILN_COMPILE} ${SOURCE_DIR}/test/models/${model}.onnx
                          -o ${OUT}/${model}.so --arch none --cache-dir ${CACHE_DIR}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "kiln-compile ${model} failed")
  endif()
endforeach()
set(ENV{KILN_RUNTIME_LIB} ${RUNTIME})
execute_process(COMMAND ${PYTHON} ${SOURCE_DIR}/tools/gpu/bench.py --models ${OUT}
                        --backend host --runs 3 --warmup 0 --no-baselines --json ${OUT}/bench.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE log)
message("${table}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "bench.py failed: ${log}")
endif()
if(NOT table MATCHES "\\| encoder \\| \\[32, 128, 16\\] \\|")
  message(FATAL_ERROR "bench.py printed no encoder row:\n${table}")
endif()
