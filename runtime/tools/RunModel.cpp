//===- RunModel.cpp - run a loaded model on host tensors -------------------===//

#include "RunModel.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cstring>

namespace kiln {

kiln_tensor_t tensorView(ref::Tensor &t) {
  kiln_tensor_t v;
  std::memset(&v, 0, sizeof(v));
  v.dtype = static_cast<kiln_dtype_t>(t.dtype());
  v.rank = static_cast<int32_t>(t.rank());
  for (int64_t d = 0; d < t.rank() && d < KILN_MAX_RANK; ++d)
    v.dims[d] = t.dim(d);
  v.data = t.bytes();
  v.size_bytes = t.byteSize();
  return v;
}

absl::StatusOr<std::vector<ref::Tensor>> runLoadedModel(const kiln_model_t *model,
                                                        std::vector<ref::Tensor> &inputs,
                                                        kiln_profile_t *profile,
                                                        uint64_t maxTensorBytes) {
  auto error = [](kiln_status_t code) {
    return absl::Status(static_cast<absl::StatusCode>(code), kiln_last_error());
  };
  std::vector<kiln_tensor_t> in;
  for (ref::Tensor &t : inputs)
    in.push_back(tensorView(t));
  size_t numOutputs = 0;
  kiln_model_num_outputs(model, &numOutputs);
  std::vector<kiln_tensor_t> out(numOutputs);
  std::memset(out.data(), 0, out.size() * sizeof(kiln_tensor_t));
  kiln_status_t s = kiln_model_output_shapes(model, in.data(), in.size(), out.data(), out.size());
  if (s != KILN_OK && s != KILN_FAILED_PRECONDITION)
    return error(s);
  std::vector<std::vector<uint8_t>> buffers(out.size());
  kiln_run_options_t options = KILN_RUN_OPTIONS_INIT;
  options.profile = profile;
  options.max_tensor_bytes = maxTensorBytes;
  for (size_t attempt = 0;; ++attempt) {
    for (size_t i = 0; i < out.size(); ++i) {
      // Sized before allocating: the run itself checks its limit only once it
      // runs, and these buffers come first.
      if (out[i].size_bytes > maxTensorBytes)
        return absl::ResourceExhaustedError(absl::StrCat(
            "output ", i, " (", ref::info(static_cast<ref::DType>(out[i].dtype)).name, "[",
            ref::shapeToString(ref::Shape(out[i].dims, out[i].dims + out[i].rank)), "]) is ",
            out[i].size_bytes, " bytes, over the limit of ", maxTensorBytes,
            " bytes for one tensor (max tensor bytes)"));
      buffers[i].resize(std::max<size_t>(out[i].size_bytes, 1));
      out[i].data = buffers[i].data();
      out[i].size_bytes = buffers[i].size();
    }
    s = kiln_model_run(model, in.data(), in.size(), out.data(), out.size(), &options);
    if (s == KILN_OUT_OF_RANGE && attempt < out.size())
      continue;
    if (s != KILN_OK)
      return error(s);
    break;
  }
  std::vector<ref::Tensor> results;
  for (kiln_tensor_t &o : out) {
    ref::Tensor t(static_cast<ref::DType>(o.dtype), ref::Shape(o.dims, o.dims + o.rank));
    std::memcpy(t.bytes(), o.data, t.byteSize());
    results.push_back(std::move(t));
  }
  return results;
}

} // namespace kiln
