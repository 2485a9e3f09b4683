# cmake -DINPUT=FILE -DOUTPUT=FILE.inc -P EmbedText.cmake
# Writes FILE's text as a C++ raw string literal, so a binary carries a header it
# needs at run time instead of a path into the source tree (an installed, moved
# compiler still finds it).
file(READ "${INPUT}" text)
string(FIND "${text}" ")kiln_embedded\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )kiln_embedded\"")
endif()
file(WRITE "${OUTPUT}.tmp" "R\"kiln_embedded(${text})kiln_embedded\"\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
