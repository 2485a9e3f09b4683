# Regenerates docs/onnx-coverage.md from this run's import results and fails when
# the committed copy differs: the doc is generated, never edited by hand.
execute_process(COMMAND ${PYTHON} ${SCRIPT} ${STATIC} ${DYNAMIC}
                OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tools/gen-onnx-coverage.py failed")
endif()
file(READ ${DOC} committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "docs/onnx-coverage.md is stale; regenerate it:\n"
          "  python3 tools/gen-onnx-coverage.py ${STATIC} ${DYNAMIC} > docs/onnx-coverage.md")
endif()
