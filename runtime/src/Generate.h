//===- Generate.h - the token generation loop of kiln_generate --*- C++ -*-===//
//
// Prefill, then decode steps, of a decoder exported the way torch and optimum
// export them: input_ids (and attention_mask, position_ids when the model takes
// them) in, logits out, and each cache pair as inputs past_key_values.N.key /
// .value and outputs present.N.key / .value, growing along dim 2. The loop runs
// the model through the public C API (as an application would): each step's
// presents are the next step's pasts.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_GENERATE_H
#define KILN_RUNTIME_SRC_GENERATE_H

#include "kiln/runtime.h"

#include "absl/status/status.h"

#include <cstdint>

namespace kiln::rt {

/// kiln_generate (runtime.h says what each argument means).
absl::Status generateTokens(const kiln_model_t *model, const int64_t *inputIds,
                            const int64_t *attentionMask, size_t batch, size_t promptLength,
                            const kiln_generate_options_t &options, int64_t *outTokens,
                            size_t *outSteps);

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_GENERATE_H
