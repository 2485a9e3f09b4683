# Configures and builds kiln with KILN_BUILD_COMPILER=OFF: only runtime/ builds,
# with no MLIR or LLVM on its include path.
execute_process(
  COMMAND ${CMAKE_COMMAND} -G Ninja -S ${SOURCE_DIR} -B ${BINARY_DIR}
          -DKILN_BUILD_COMPILER=OFF -DKILN_BUILD_TESTS=OFF
  RESULT_VARIABLE configured)
if(NOT configured EQUAL 0)
  message(FATAL_ERROR "configuring the runtime alone failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY_DIR} --target kiln_runtime
                RESULT_VARIABLE built)
if(NOT built EQUAL 0)
  message(FATAL_ERROR "building the runtime alone failed")
endif()
