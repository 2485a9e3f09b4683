//===- Enums.h - the enums of ops' attributes, expanded ---------*- C++ -*-===//
//
// The rows of OpEnums.def as C++: one enum class per list, each value with
// the number its row gives (the artifact format's, and the kiln dialect's),
// and a checked conversion from a number, for readers of data that may be
// damaged. No MLIR and no Abseil: both halves include it.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_OPS_ENUMS_H
#define KILN_OPS_ENUMS_H

#include <cstdint>
#include <optional>

namespace kiln::ops {

#define KILN_ENUM(Enum, Mnemonic, Summary) enum class Enum : uint8_t {
#define KILN_CASE(Case, SchemaCase, Number) Case = Number,
#define KILN_END_ENUM() };
#include "kiln/ops/OpEnums.def"

/// The value of `Enum` numbered `number`, or nullopt when no row has it.
template <typename Enum> std::optional<Enum> enumFromNumber(int number);

#define KILN_ENUM(Enum, Mnemonic, Summary)                                                        \
  template <> inline std::optional<Enum> enumFromNumber<Enum>(int number) {                       \
    using E = Enum;                                                                                \
    switch (number) {
#define KILN_CASE(Case, SchemaCase, Number) case Number:
#define KILN_END_ENUM()                                                                            \
  return static_cast<E>(number);                                                                   \
  }                                                                                                \
  return std::nullopt;                                                                             \
  }
#include "kiln/ops/OpEnums.def"

/// The mnemonic `Enum`'s attribute prints with ("coordinate_mode"), for messages.
template <typename Enum> constexpr const char *enumMnemonic();

#define KILN_ENUM(Enum, Mnemonic, Summary)                                                        \
  template <> constexpr const char *enumMnemonic<Enum>() { return #Mnemonic; }
#include "kiln/ops/OpEnums.def"

/// The name of `value`'s row ("gelu_erf"), for messages; "?" for a number no
/// row has.
template <typename Enum> const char *caseName(Enum value);

#define KILN_ENUM(Enum, Mnemonic, Summary)                                                        \
  template <> inline const char *caseName<Enum>(Enum value) {                                      \
    using E = Enum;                                                                                \
    switch (value) {
#define KILN_CASE(Case, SchemaCase, Number)                                                       \
  case E::Case:                                                                                    \
    return #Case;
#define KILN_END_ENUM()                                                                            \
  }                                                                                                \
  return "?";                                                                                      \
  }
#include "kiln/ops/OpEnums.def"

/// `value` as `Other`, another expansion of the same rows (the dialect's
/// enum, the schema's). Their numbers are the rows'; a file that converts
/// checks them with one static_assert per row, expanding the table once more:
///
///   #define KILN_ENUM(Enum, Mnemonic, Summary) namespace check_##Enum { using E = fb::Enum;
///   #define KILN_CASE(Case, SchemaCase, Number) static_assert(int(E::SchemaCase) == Number);
///   #define KILN_END_ENUM() }
///   #include "kiln/ops/OpEnums.def"
template <typename Other, typename Enum> constexpr Other sameEnum(Enum value) {
  return static_cast<Other>(static_cast<int>(value));
}

} // namespace kiln::ops

#endif // KILN_OPS_ENUMS_H
