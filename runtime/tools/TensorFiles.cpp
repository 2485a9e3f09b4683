//===- TensorFiles.cpp - TensorProto and .npy without MLIR or protobuf ----===//

#include "TensorFiles.h"

#include "absl/strings/str_cat.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <sys/stat.h>

namespace kiln {
namespace {
using ref::DType;

/// Files above this are refused before they are read (a tensor file of a model
/// kiln runs is far smaller; a larger one is a mistake or an attack).
constexpr size_t kMaxFileBytes = size_t(1) << 34;
/// Elements of one tensor at most, before anything is allocated.
constexpr int64_t kMaxElements = int64_t(1) << 36;

absl::Status fileError(const std::string &path, const std::string &what) {
  std::string file = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  return absl::InvalidArgumentError(absl::StrCat(file, ": error: ", what));
}

// ONNX TensorProto.DataType numbers (onnx.proto) for kiln's dtypes.
struct OnnxType {
  int code;
  DType dtype;
};
constexpr OnnxType kOnnxTypes[] = {
    {1, DType::f32},         {2, DType::u8},        {3, DType::i8},          {4, DType::u16},
    {5, DType::i16},         {6, DType::i32},       {7, DType::i64},         {9, DType::boolean},
    {10, DType::f16},        {11, DType::f64},      {12, DType::u32},        {13, DType::u64},
    {16, DType::bf16},       {17, DType::f8e4m3fn}, {18, DType::f8e4m3fnuz}, {19, DType::f8e5m2},
    {20, DType::f8e5m2fnuz}, {21, DType::u4},       {22, DType::i4},         {23, DType::f4e2m1fn},
    {25, DType::u2},         {26, DType::i2},
};

std::optional<DType> dtypeOfOnnx(int code) {
  for (const OnnxType &t : kOnnxTypes)
    if (t.code == code)
      return t.dtype;
  return std::nullopt;
}

int onnxOfDtype(DType dtype) {
  for (const OnnxType &t : kOnnxTypes)
    if (t.dtype == dtype)
      return t.code;
  return 0;
}

/// A bounded reader of protobuf's wire format.
class Wire {
public:
  Wire(const uint8_t *data, size_t size) : at(data), end(data + size) {}
  bool done() const { return at >= end; }
  bool varint(uint64_t &v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= end)
        return false;
      uint8_t b = *at++;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        return true;
    }
    return false;
  }
  bool fixed(size_t bytes, uint64_t &v) {
    if (static_cast<size_t>(end - at) < bytes)
      return false;
    v = 0;
    std::memcpy(&v, at, bytes);
    at += bytes;
    return true;
  }
  bool bytes(const uint8_t *&data, size_t &size) {
    uint64_t n;
    if (!varint(n) || n > static_cast<uint64_t>(end - at))
      return false;
    data = at;
    size = static_cast<size_t>(n);
    at += size;
    return true;
  }
  /// Skips a field of `wireType`.
  bool skip(uint64_t wireType) {
    uint64_t v;
    const uint8_t *d;
    size_t n;
    switch (wireType) {
    case 0: return varint(v);
    case 1: return fixed(8, v);
    case 2: return bytes(d, n);
    case 5: return fixed(4, v);
    default: return false;
    }
  }

private:
  const uint8_t *at, *end;
};

/// The TensorProto fields kiln reads. Repeated numbers keep their encoded bytes
/// (packed) or values (unpacked) until the element count is known.
struct Proto {
  std::vector<int64_t> dims;
  int dataType = 0;
  std::string name;
  const uint8_t *raw = nullptr;
  size_t rawSize = 0;
  bool hasRaw = false, external = false;
  // Field number -> values (floats and doubles as bit patterns).
  std::vector<uint64_t> numbers[12];
  bool hasNumbers[12] = {};
};

/// Appends repeated field `field`'s value(s): one unpacked value, or a packed run.
bool repeated(Wire &wire, uint64_t wireType, int field, Proto &p) {
  std::vector<uint64_t> &out = p.numbers[field];
  p.hasNumbers[field] = true;
  bool isFloat = field == 4, isDouble = field == 10;
  if (wireType == 2) {
    const uint8_t *data;
    size_t size;
    if (!wire.bytes(data, size))
      return false;
    Wire packed(data, size);
    while (!packed.done()) {
      uint64_t v;
      if (!(isFloat ? packed.fixed(4, v) : isDouble ? packed.fixed(8, v) : packed.varint(v)))
        return false;
      if (static_cast<int64_t>(out.size()) >= kMaxElements)
        return false;
      out.push_back(v);
    }
    return true;
  }
  uint64_t v;
  if (!(isFloat    ? wireType == 5 && wire.fixed(4, v)
        : isDouble ? wireType == 1 && wire.fixed(8, v)
                   : wireType == 0 && wire.varint(v)))
    return false;
  out.push_back(v);
  return true;
}

bool parseProto(const std::string &data, Proto &p) {
  Wire wire(reinterpret_cast<const uint8_t *>(data.data()), data.size());
  while (!wire.done()) {
    uint64_t key;
    if (!wire.varint(key))
      return false;
    uint64_t field = key >> 3, wireType = key & 7;
    switch (field) {
    case 1: { // dims
      if (!repeated(wire, wireType, 1, p))
        return false;
      break;
    }
    case 2: { // data_type
      uint64_t v;
      if (wireType != 0 || !wire.varint(v))
        return false;
      p.dataType = static_cast<int>(v);
      break;
    }
    case 4:
    case 5:
    case 7:
    case 10:
    case 11:
      if (!repeated(wire, wireType, static_cast<int>(field), p))
        return false;
      break;
    case 8: { // name
      const uint8_t *d;
      size_t n;
      if (wireType != 2 || !wire.bytes(d, n))
        return false;
      p.name.assign(reinterpret_cast<const char *>(d), n);
      break;
    }
    case 9: // raw_data
      if (wireType != 2 || !wire.bytes(p.raw, p.rawSize))
        return false;
      p.hasRaw = true;
      break;
    case 14: { // data_location: 1 is EXTERNAL
      uint64_t v;
      if (wireType != 0 || !wire.varint(v))
        return false;
      p.external = v == 1;
      break;
    }
    default:
      if (!wire.skip(wireType))
        return false;
    }
  }
  for (uint64_t d : p.numbers[1])
    p.dims.push_back(static_cast<int64_t>(d));
  return true;
}

/// `shape`'s element count, or nullopt when a dim is negative or the count
/// passes kMaxElements.
std::optional<int64_t> checkedCount(const ref::Shape &shape) {
  int64_t count = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(count, d, &count) || count > kMaxElements)
      return std::nullopt;
  return count;
}

absl::Status bare(const std::string &what) { return absl::InvalidArgumentError(what); }

absl::StatusOr<NamedTensor> readProto(const std::string &data) {
  Proto p;
  if (!parseProto(data, p))
    return bare("not a TensorProto (.pb) file");
  if (p.external)
    return bare("its data is in an external file, which kiln-run does not read");
  if (p.dataType == 0)
    return bare("not a TensorProto (.pb) file");
  std::optional<DType> dtype = dtypeOfOnnx(p.dataType);
  if (!dtype)
    return bare(absl::StrCat("TensorProto data type ", p.dataType, " is not one kiln runs"));
  if (p.dims.size() > 64)
    return bare(absl::StrCat("rank ", p.dims.size(), " is absurd"));
  std::optional<int64_t> count = checkedCount(p.dims);
  if (!count)
    return bare(
        absl::StrCat("dims [", ref::shapeToString(p.dims), "] are negative or absurdly large"));
  // int4/uint4/float4 pack two elements a byte, int2/uint2 four (ONNX's layout).
  int bits = ref::info(*dtype).bits;
  bool subByte = bits == 4 || bits == 2;
  int perByte = subByte ? 8 / bits : 1;
  size_t elementBytes = ref::info(*dtype).bytes;
  size_t storedBytes = subByte ? static_cast<size_t>((*count + perByte - 1) / perByte)
                               : static_cast<size_t>(*count) * elementBytes;
  std::vector<uint8_t> packed;
  if (p.hasRaw) {
    if (p.rawSize != storedBytes)
      return bare(absl::StrCat("raw_data holds ", p.rawSize, " bytes; dims [",
                               ref::shapeToString(p.dims), "] need ", storedBytes));
  } else {
    // The typed field ONNX stores this dtype in.
    int field = *dtype == DType::f32                           ? 4
                : *dtype == DType::f64                         ? 10
                : *dtype == DType::i64                         ? 7
                : *dtype == DType::u32 || *dtype == DType::u64 ? 11
                                                               : 5;
    const std::vector<uint64_t> &values = p.numbers[field];
    size_t want = subByte ? storedBytes : static_cast<size_t>(*count);
    if (values.size() != want)
      return bare(absl::StrCat("it holds ", values.size(), " values; dims [",
                               ref::shapeToString(p.dims), "] need ", want));
    packed.resize(storedBytes);
    for (size_t i = 0; i < values.size(); ++i) {
      uint64_t v = values[i];
      std::memcpy(packed.data() + i * (subByte ? 1 : elementBytes), &v, subByte ? 1 : elementBytes);
    }
  }
  const uint8_t *bytes = p.hasRaw ? p.raw : packed.data();
  ref::Tensor t(*dtype, p.dims);
  if (!subByte) {
    if (storedBytes)
      std::memcpy(t.bytes(), bytes, storedBytes);
  } else {
    // One element per byte in kiln's tensors: setI stores each as the type
    // does (sign-extended for i4/i2); float4 keeps its four bits.
    for (int64_t i = 0; i < *count; ++i) {
      int v = (bytes[i / perByte] >> (bits * (i % perByte))) & ((1 << bits) - 1);
      if (*dtype == DType::f4e2m1fn) {
        t.bytes()[i] = static_cast<uint8_t>(v);
        continue;
      }
      if ((*dtype == DType::i4 || *dtype == DType::i2) && (v & (1 << (bits - 1))))
        v -= 1 << bits;
      t.setI(i, v);
    }
  }
  return NamedTensor{std::move(t), p.name};
}

std::optional<DType> npyType(const std::string &descr) {
  if (descr.size() < 2 || descr[0] == '>')
    return std::nullopt; // big-endian data is not supported
  static const std::pair<const char *, DType> kCodes[] = {
      {"f2", DType::f16}, {"f4", DType::f32}, {"f8", DType::f64}, {"b1", DType::boolean},
      {"i1", DType::i8},  {"i2", DType::i16}, {"i4", DType::i32}, {"i8", DType::i64},
      {"u1", DType::u8},  {"u2", DType::u16}, {"u4", DType::u32}, {"u8", DType::u64}};
  for (auto [code, dtype] : kCodes)
    if (descr.compare(1, std::string::npos, code) == 0)
      return dtype;
  return std::nullopt;
}

/// The text after `'key':` in a .npy header dict, or npos.
size_t valueOf(const std::string &header, const char *key) {
  size_t at = header.find(std::string("'") + key + "'");
  if (at == std::string::npos)
    return at;
  at = header.find(':', at);
  if (at == std::string::npos)
    return at;
  return header.find_first_not_of(" ", at + 1);
}

absl::StatusOr<NamedTensor> readNpy(const std::string &data) {
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0)
    return bare("not a .npy file");
  int major = static_cast<unsigned char>(data[6]);
  size_t headerLength = 0, offset = major == 1 ? 10 : 12;
  if (data.size() < offset)
    return bare("truncated .npy header");
  for (size_t i = 0; i < offset - 8; ++i)
    headerLength |= size_t(static_cast<unsigned char>(data[8 + i])) << (8 * i);
  if (headerLength > data.size() - offset || headerLength > (1 << 16))
    return bare("truncated or absurd .npy header");
  std::string header = data.substr(offset, headerLength);
  size_t descr = valueOf(header, "descr");
  if (descr == std::string::npos || header[descr] != '\'')
    return bare(".npy header has no descr");
  size_t descrEnd = header.find('\'', descr + 1);
  if (descrEnd == std::string::npos)
    return bare(".npy header has no descr");
  std::string code = header.substr(descr + 1, descrEnd - descr - 1);
  std::optional<DType> dtype = npyType(code);
  if (!dtype)
    return bare(absl::StrCat(".npy element type '", code, "' is not supported"));
  size_t order = valueOf(header, "fortran_order");
  if (order != std::string::npos && header.compare(order, 4, "True") == 0)
    return bare("Fortran-ordered .npy files are not supported");
  size_t shapeAt = valueOf(header, "shape");
  if (shapeAt == std::string::npos || header[shapeAt] != '(')
    return bare(".npy header has no shape");
  size_t shapeEnd = header.find(')', shapeAt);
  if (shapeEnd == std::string::npos)
    return bare(".npy header has no shape");
  ref::Shape shape;
  std::string dims = header.substr(shapeAt + 1, shapeEnd - shapeAt - 1);
  std::istringstream in(dims);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t first = item.find_first_not_of(" "), last = item.find_last_not_of(" ");
    if (first == std::string::npos)
      continue;
    item = item.substr(first, last - first + 1);
    if (item.empty() || item.size() > 15 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      return bare(absl::StrCat(".npy dim '", item, "' is not a size"));
    shape.push_back(std::stoll(item));
    if (shape.size() > 64)
      return bare(".npy rank is absurd");
  }
  std::optional<int64_t> count = checkedCount(shape);
  if (!count)
    return bare(".npy shape is absurdly large");
  size_t need = static_cast<size_t>(*count) * ref::info(*dtype).bytes;
  size_t begin = offset + headerLength;
  if (data.size() - begin != need)
    return bare(absl::StrCat(".npy data holds ", data.size() - begin, " bytes; shape [",
                             ref::shapeToString(shape), "] needs ", need));
  ref::Tensor t(*dtype, shape);
  if (need)
    std::memcpy(t.bytes(), data.data() + begin, need);
  return NamedTensor{std::move(t), ""};
}

} // namespace

absl::StatusOr<NamedTensor> readTensorFile(const std::string &path) {
  // Only regular files: opening a FIFO would block until someone writes to it,
  // and a device like /dev/zero never ends.
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return fileError(path, absl::StrCat("cannot read the file: ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode))
    return fileError(path, "cannot read the file: not a regular file");
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file)
    return fileError(path, absl::StrCat("cannot read the file: ", std::strerror(errno)));
  std::streamoff size = file.tellg();
  if (size < 0 || static_cast<uint64_t>(size) > kMaxFileBytes)
    return fileError(path, "cannot read the file: not a regular file, or too large");
  std::string data(static_cast<size_t>(size), '\0');
  file.seekg(0);
  if (size && !file.read(data.data(), size))
    return fileError(path, "cannot read the file");
  bool npy = path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
  absl::StatusOr<NamedTensor> t = npy ? readNpy(data) : readProto(data);
  if (!t.ok())
    return fileError(path, std::string(t.status().message()));
  return t;
}

absl::StatusOr<ref::Tensor> parseNpy(const std::string &data) {
  absl::StatusOr<NamedTensor> t = readNpy(data);
  if (!t.ok())
    return t.status();
  return std::move(t->tensor);
}

absl::StatusOr<NamedTensor> parseTensorProto(const std::string &data) { return readProto(data); }

namespace {
void putVarint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void putBytes(std::string &out, int field, const char *data, size_t size) {
  putVarint(out, (uint64_t(field) << 3) | 2);
  putVarint(out, size);
  out.append(data, size);
}
} // namespace

absl::Status writeTensorProto(const ref::Tensor &t, const std::string &name,
                              const std::string &path) {
  std::string out;
  for (int64_t d : t.shape()) {
    putVarint(out, (1 << 3) | 0);
    putVarint(out, static_cast<uint64_t>(d));
  }
  putVarint(out, (2 << 3) | 0);
  putVarint(out, static_cast<uint64_t>(onnxOfDtype(t.dtype())));
  putBytes(out, 8, name.data(), name.size());
  int bits = ref::info(t.dtype()).bits;
  bool subByte = bits == 4 || bits == 2;
  if (subByte) {
    // Sub-byte types pack into bytes, the first element in the low bits.
    int perByte = 8 / bits;
    std::string packed((t.numel() + perByte - 1) / perByte, '\0');
    for (int64_t i = 0; i < t.numel(); ++i)
      packed[i / perByte] |=
          static_cast<char>((t.bytes()[i] & ((1 << bits) - 1)) << (bits * (i % perByte)));
    putBytes(out, 9, packed.data(), packed.size());
  } else {
    putBytes(out, 9, reinterpret_cast<const char *>(t.bytes()), t.byteSize());
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file || !file.write(out.data(), static_cast<std::streamsize>(out.size())))
    return fileError(path, "cannot write the file");
  return absl::OkStatus();
}

absl::Status writeNpy(const ref::Tensor &t, const std::string &path) {
  static const std::pair<DType, const char *> kCodes[] = {
      {DType::f16, "<f2"}, {DType::f32, "<f4"}, {DType::f64, "<f8"}, {DType::boolean, "|b1"},
      {DType::i8, "|i1"},  {DType::i16, "<i2"}, {DType::i32, "<i4"}, {DType::i64, "<i8"},
      {DType::u8, "|u1"},  {DType::u16, "<u2"}, {DType::u32, "<u4"}, {DType::u64, "<u8"}};
  const char *descr = nullptr;
  for (auto [dtype, code] : kCodes)
    if (dtype == t.dtype())
      descr = code;
  if (!descr)
    return fileError(path, "numpy has no type for " + t.describe());
  std::string shape;
  for (int64_t d : t.shape())
    absl::StrAppend(&shape, d, ",");
  if (t.rank() > 1)
    shape.pop_back(); // "(2,)" for one dim, "(2,3)" for more
  std::string header = absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (",
                                    shape, "), }");
  // Magic, version 1.0, the header length, and the header padded with spaces
  // to a multiple of 64 bytes (numpy's alignment) ending in a newline.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(1);
  out.push_back(0);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out.append(reinterpret_cast<const char *>(t.bytes()), t.byteSize());
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file || !file.write(out.data(), static_cast<std::streamsize>(out.size())))
    return fileError(path, "cannot write the file");
  return absl::OkStatus();
}

std::string summarizeTensor(const ref::Tensor &t, size_t maxValues) {
  std::string s = t.describe() + " [";
  char number[64];
  for (int64_t i = 0; i < t.numel() && i < static_cast<int64_t>(maxValues); ++i) {
    if (i)
      s += ", ";
    if (ref::isFloat(t.dtype()))
      std::snprintf(number, sizeof(number), "%g", t.getF(i));
    else if (t.dtype() == DType::u64) // getI gives u64 as its bit pattern
      std::snprintf(number, sizeof(number), "%llu",
                    static_cast<unsigned long long>(static_cast<uint64_t>(t.getI(i))));
    else
      std::snprintf(number, sizeof(number), "%lld", static_cast<long long>(t.getI(i)));
    s += number;
  }
  if (t.numel() > static_cast<int64_t>(maxValues))
    s += ", ...";
  return s + "]";
}

absl::Status emitOutputs(const std::vector<ref::Tensor> &outputs,
                         const std::vector<std::string> &names, const std::string &outputDir,
                         bool print) {
  if (!outputDir.empty())
    for (size_t at = 1; at <= outputDir.size(); ++at) // mkdir -p
      if (at == outputDir.size() || outputDir[at] == '/') {
        std::string prefix = outputDir.substr(0, at);
        if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
          return absl::InvalidArgumentError(
              absl::StrCat("cannot create ", outputDir, ": ", std::strerror(errno)));
      }
  for (size_t k = 0; k < outputs.size(); ++k) {
    std::string name = k < names.size() ? names[k] : absl::StrCat("output", k);
    if (print)
      std::printf("%s: %s\n", name.c_str(), summarizeTensor(outputs[k]).c_str());
    if (!outputDir.empty())
      if (absl::Status s =
              writeTensorProto(outputs[k], name, absl::StrCat(outputDir, "/output_", k, ".pb"));
          !s.ok())
        return s;
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, std::string>>
parseInputSpecs(const std::vector<std::string> &specs) {
  std::map<std::string, std::string> files;
  for (const std::string &spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return absl::InvalidArgumentError(absl::StrCat("--input '", spec, "' is not NAME=FILE"));
    if (!files.emplace(spec.substr(0, eq), spec.substr(eq + 1)).second)
      return absl::InvalidArgumentError(
          absl::StrCat("input '", spec.substr(0, eq), "' is given twice"));
  }
  return files;
}

absl::StatusOr<std::vector<std::string>>
matchInputFiles(const std::map<std::string, std::string> &files,
                const std::vector<std::string> &names) {
  for (const auto &[name, file] : files)
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::string known;
      for (const std::string &k : names)
        known += (known.empty() ? "" : ", ") + k;
      return absl::InvalidArgumentError(
          absl::StrCat("the model has no input '", name, "' (its inputs: ", known, ")"));
    }
  std::vector<std::string> ordered;
  for (const std::string &name : names) {
    auto it = files.find(name);
    if (it == files.end())
      return absl::InvalidArgumentError(
          absl::StrCat("missing input '", name, "' (give it with --input ", name, "=FILE)"));
    ordered.push_back(it->second);
  }
  return ordered;
}

} // namespace kiln
