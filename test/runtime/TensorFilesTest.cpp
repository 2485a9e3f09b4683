// Tensor files without protobuf or MLIR (runtime/tools/TensorFiles): every dtype
// round-trips, and a damaged or hostile file is an error before anything large
// is allocated.

#include "TensorFiles.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

std::string temporaryPath(const std::string &name) {
  return ::testing::TempDir() + "/kiln-tensorfiles-" + name;
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(TensorFiles, EveryDtypeRoundTrips) {
  using kiln::ref::DType;
  for (DType t : {DType::f16,      DType::bf16, DType::f32, DType::f64,      DType::boolean,
                  DType::i8,       DType::i16,  DType::i32, DType::i64,      DType::u8,
                  DType::u16,      DType::u32,  DType::u64, DType::f8e4m3fn, DType::f8e5m2,
                  DType::f4e2m1fn, DType::i4,   DType::u4,  DType::i2,       DType::u2}) {
    kiln::ref::Tensor x(t, {3, 5});
    for (int64_t i = 0; i < x.numel(); ++i)
      x.setF(i, static_cast<double>((i % 3) - 1));
    std::string path = temporaryPath("roundtrip.pb");
    ASSERT_TRUE(kiln::writeTensorProto(x, "x", path).ok()) << x.describe();
    absl::StatusOr<kiln::NamedTensor> back = kiln::readTensorFile(path);
    ASSERT_TRUE(back.ok()) << x.describe() << ": " << back.status().message();
    EXPECT_EQ(back->name, "x");
    EXPECT_EQ(back->tensor.dtype(), t);
    EXPECT_EQ(back->tensor.shape(), x.shape());
    for (int64_t i = 0; i < x.numel(); ++i)
      EXPECT_EQ(back->tensor.getF(i), x.getF(i)) << x.describe() << " element " << i;
  }
}

TEST(TensorFiles, HostileNpyHeadersAreErrors) {
  auto npy = [](const std::string &header, size_t dataBytes) {
    std::string h = header;
    while ((10 + h.size() + 1) % 64)
      h += ' ';
    h += '\n';
    std::string out = "\x93NUMPY\x01";
    out += '\0';
    out += static_cast<char>(h.size() & 0xff);
    out += static_cast<char>(h.size() >> 8);
    return out + h + std::string(dataBytes, '\0');
  };
  struct Case {
    std::string bytes, message;
  };
  std::vector<Case> cases = {
      // Declares 4 GiB in a small file: refused before allocating.
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1073741824,), }", 16),
       ".npy data holds 16 bytes; shape [1073741824] needs 4294967296"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (123456789012345678901234,), }", 0),
       ".npy dim '123456789012345678901234' is not a size"},
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-3, 16), }", 0),
       ".npy dim '-3' is not a size"},
      // A product that wraps 64 bits.
      {npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0),
       ".npy shape is absurdly large"},
      {npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8),
       ".npy element type '>f4' is not supported"},
      {std::string("\x93NUMPY\x01\0\xff\xff", 10) + "{}", "truncated or absurd .npy header"},
      {"nonsense", "not a .npy file"},
  };
  for (const Case &c : cases) {
    std::string path = temporaryPath("hostile.npy");
    writeFile(path, c.bytes);
    absl::StatusOr<kiln::NamedTensor> t = kiln::readTensorFile(path);
    ASSERT_FALSE(t.ok()) << c.message;
    EXPECT_NE(std::string(t.status().message()).find(c.message), std::string::npos)
        << t.status().message();
  }
}

TEST(TensorFiles, DamagedTensorProtosAreErrors) {
  kiln::ref::Tensor x(kiln::ref::DType::f32, {4, 4});
  std::string path = temporaryPath("damaged.pb");
  ASSERT_TRUE(kiln::writeTensorProto(x, "x", path).ok());
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Every truncation is an error (never a crash or a wrong tensor).
  for (size_t n = 1; n < bytes.size(); ++n) {
    writeFile(path, bytes.substr(0, n));
    EXPECT_FALSE(kiln::readTensorFile(path).ok()) << n;
  }
  // dims that wrap, and raw data that does not match them.
  std::string wrap;
  for (int i = 0; i < 2; ++i)
    wrap += std::string("\x08\x80\x80\x80\x80\x80\x80\x80\x80\x01", 10); // dims: 2^63
  wrap += std::string("\x10\x01", 2);                                    // data_type FLOAT
  writeFile(path, wrap);
  absl::StatusOr<kiln::NamedTensor> t = kiln::readTensorFile(path);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(std::string(t.status().message()).find("negative or absurdly large"), std::string::npos)
      << t.status().message();
}

TEST(TensorFiles, SummariesPrintUnsignedValuesAsUnsigned) {
  kiln::ref::Tensor x(kiln::ref::DType::u64, {1});
  x.setI(0, static_cast<int64_t>(uint64_t(1) << 63));
  EXPECT_EQ(kiln::summarizeTensor(x), "ui64[1] [9223372036854775808]");
}

} // namespace
