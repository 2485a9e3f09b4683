# Regenerates docs/onnx-coverage.md from this run's conformance results and fails
# when the committed copy differs: the doc is generated, never edited by hand.
set(results ${RESULTS}/onnx-import-static.json ${RESULTS}/onnx-import-dynamic.json
            ${RESULTS}/onnx-reference-static.json ${RESULTS}/onnx-reference-dynamic.json
            ${RESULTS}/onnx-host-static.json ${RESULTS}/onnx-host-dynamic.json)
execute_process(COMMAND ${PYTHON} ${SCRIPT} ${results}
                OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tools/gen-onnx-coverage.py failed")
endif()
file(READ ${DOC} committed)
if(NOT generated STREQUAL committed)
  string(REPLACE ";" " " args "${results}")
  message(FATAL_ERROR "docs/onnx-coverage.md is stale; regenerate it:\n"
          "  python3 tools/gen-onnx-coverage.py ${args} > docs/onnx-coverage.md")
endif()
