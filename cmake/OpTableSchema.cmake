# cmake -DINPUT=ElementwiseOps.def -DENUMS=OpEnums.def -DOUTPUT=kiln_ops.fbs
#       -P OpTableSchema.cmake
# Writes the artifact schema's UnaryFn and BinaryFn enums from the op table's rows
# (runtime/ops/include/kiln/ops/ElementwiseOps.def), each function with the number
# its row gives, and the enums of ops' attributes from OpEnums.def likewise: the
# tables are the one list, and the schema keeps their written-out numbers.
# kiln_artifact.fbs includes the result.
include(${CMAKE_CURRENT_LIST_DIR}/OpEnumRows.cmake)
file(STRINGS "${INPUT}" rows REGEX "^KILN_(UNARY|BINARY)\\(")
set(unary "")
set(binary "")
foreach(row IN LISTS rows)
  if(NOT row MATCHES "^KILN_(UNARY|BINARY)\\(([A-Za-z0-9]+), *([0-9]+),")
    message(FATAL_ERROR "${INPUT}: a row without a name and number: ${row}")
  endif()
  if(CMAKE_MATCH_1 STREQUAL "UNARY")
    list(APPEND unary "  ${CMAKE_MATCH_2} = ${CMAKE_MATCH_3}")
  else()
    list(APPEND binary "  ${CMAKE_MATCH_2} = ${CMAKE_MATCH_3}")
  endif()
endforeach()
list(JOIN unary ",\n" unary)
list(JOIN binary ",\n" binary)
kiln_read_op_enums("${ENUMS}")
set(enums "")
foreach(enum IN LISTS KILN_ENUMS)
  kiln_format_op_enum_cases(${enum} "  @SCHEMA@ = @NUMBER@" ",\n" cases)
  string(APPEND enums "\n/// ${KILN_ENUM_${enum}_SUMMARY}\nenum ${enum} : ubyte {\n${cases}\n}\n")
endforeach()
file(WRITE "${OUTPUT}.tmp"
"// Generated from kiln/ops/ElementwiseOps.def and OpEnums.def by
// cmake/OpTableSchema.cmake: edit the tables' rows, not this file.

namespace kiln.schema;

enum UnaryFn : ubyte {
${unary}
}

enum BinaryFn : ubyte {
${binary}
}
${enums}")
# Only a changed schema regenerates the headers that every reader includes.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
