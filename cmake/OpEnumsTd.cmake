# cmake -DINPUT=OpEnums.def -DOUTPUT=KilnOpEnums.td -P OpEnumsTd.cmake
# Writes the kiln dialect's enum attributes (ODS I32EnumAttr and EnumAttr) from
# the rows of runtime/ops/include/kiln/ops/OpEnums.def; ir/Kiln/KilnAttrs.td
# includes the result. The schema's enums come from the same rows
# (OpTableSchema.cmake), so the two agree value by value.
include(${CMAKE_CURRENT_LIST_DIR}/OpEnumRows.cmake)
kiln_read_op_enums("${INPUT}")
set(td "// Generated from kiln/ops/OpEnums.def by cmake/OpEnumsTd.cmake: edit the\n// table's rows, not this file.\n")
foreach(enum IN LISTS KILN_ENUMS)
  kiln_format_op_enum_cases(${enum} "I32EnumAttrCase<\"@NAME@\", @NUMBER@>" ",\n    " cases)
  string(APPEND td "
def Kiln_${enum} : I32EnumAttr<\"${enum}\", \"${KILN_ENUM_${enum}_SUMMARY}\", [
    ${cases}]> {
  let cppNamespace = \"::kiln\";
  let genSpecializedAttr = 0;
}
def Kiln_${enum}Attr : EnumAttr<Kiln_Dialect, Kiln_${enum}, \"${KILN_ENUM_${enum}_MNEMONIC}\">;
")
endforeach()
file(WRITE "${OUTPUT}.tmp" "${td}")
# Only a changed table reruns TableGen and rebuilds the dialect.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
