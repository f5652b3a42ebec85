// libFuzzer target: the argument checks of GENERATED code. packed_args.tir is built to C
// with the packed API at build time (tests/fuzz/CMakeLists.txt) and linked here with the
// C runtime; the bytes are decoded into a packed call (num_args, type codes, TVMValues,
// DLTensor fields) made through TVMFuncGetGlobal/TVMFuncCall as firmware would.
// The call must either fail with TVMGetLastError set, or succeed exactly when the
// arguments match scale_add's signature and then compute the right C; no write may land
// outside the buffers (guard bytes around every tensor's data, checked after the call)
// nor in the inputs. The caller is honest where the packed API trusts it: a handle type
// code comes with a valid DLTensor (or NULL), shape and strides hold ndim entries, and
// data spans what shape, strides, dtype and byte_offset say.
//
// Input layout (missing bytes read as 0):
//   u8 num_args (mod 9), then per argument:
//   i8 type code; for codes 7 and 13 (tensor handles) u8 kind (even: NULL handle,
//   odd: a DLTensor), else 8 raw bytes of TVMValue. A DLTensor is: i8 ndim, u8 dtype
//   code, u8 bits, u16 lanes, ndim shape values, u8 strides flag (odd: ndim stride
//   values follow, even: NULL), byte_offset, u8 device type, u8 device id, u8 data
//   flag (odd: a buffer, even: NULL). A value is one byte v (v < 0xF8), or 0xF8..0xFF
//   followed by 8 raw bytes.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include <tvm/runtime/c_runtime_api.h>

namespace {

constexpr size_t kGuard = 64;            // guard bytes on each side of a tensor's data
constexpr uint8_t kGuardByte = 0xA5;
constexpr size_t kMaxBufferBytes = 1 << 20;  // larger claims get a small (lying) buffer
constexpr int kMaxArgs = 8;

[[noreturn]] void bug(const char* what) {
  std::fprintf(stderr, "fuzz_packed_args: %s (last error: '%s')\n", what, TVMGetLastError());
  std::abort();
}

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t u8() { return at_ < size_ ? data_[at_++] : 0; }
  uint64_t raw64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(u8()) << (8 * i);
    return v;
  }
  int64_t value() {
    uint8_t b = u8();
    return b < 0xF8 ? b : static_cast<int64_t>(raw64());
  }

 private:
  const uint8_t* data_;
  size_t size_, at_ = 0;
};

// One DLTensor with its own shape, strides and guarded data.
struct Tensor {
  DLTensor t{};
  std::vector<int64_t> shape, strides;
  std::unique_ptr<uint8_t[]> storage;  // guard, data, guard
  size_t data_bytes = 0;

  uint8_t* data() const { return storage.get() + kGuard; }
  bool guards_intact() const {
    if (!storage) return true;
    for (size_t i = 0; i < kGuard; ++i)
      if (storage[i] != kGuardByte || storage[kGuard + data_bytes + i] != kGuardByte) return false;
    return true;
  }
};

// The bytes an honest caller provides: the span of the elements shape and strides
// address, plus byte_offset. 0 when that is not a sensible size (negative or huge).
size_t honest_bytes(const Tensor& x) {
  const int64_t kMax = static_cast<int64_t>(kMaxBufferBytes);  // bounds every step: no overflow
  int64_t elems = 1;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    if (x.shape[i] < 0 || x.shape[i] > kMax) return 0;
    if (x.t.strides == nullptr) {
      elems *= x.shape[i];
      if (elems > kMax) return 0;
    }
  }
  if (x.t.strides != nullptr) {
    for (size_t i = 0; i < x.shape.size(); ++i)
      if (x.shape[i] == 0) return 0;
    for (size_t i = 0; i < x.shape.size(); ++i) {
      if (x.strides[i] < -kMax || x.strides[i] > kMax) return 0;
      elems += (x.shape[i] - 1) * (x.strides[i] < 0 ? -x.strides[i] : x.strides[i]);
      if (elems > kMax) return 0;
    }
  }
  if (x.t.byte_offset > kMaxBufferBytes) return 0;
  const int64_t bytes = (elems * x.t.dtype.bits * x.t.dtype.lanes + 7) / 8 + static_cast<int64_t>(x.t.byte_offset);
  return bytes > kMax ? 0 : static_cast<size_t>(bytes);
}

std::unique_ptr<Tensor> decode_tensor(Reader& in) {
  auto x = std::make_unique<Tensor>();
  x->t.ndim = static_cast<int8_t>(in.u8());
  x->t.dtype.code = in.u8();
  x->t.dtype.bits = in.u8();
  x->t.dtype.lanes = static_cast<uint16_t>(in.u8() | (in.u8() << 8));
  const size_t ndim = x->t.ndim > 0 ? static_cast<size_t>(x->t.ndim) : 0;
  for (size_t i = 0; i < ndim; ++i) x->shape.push_back(in.value());
  x->shape.shrink_to_fit();  // exactly ndim entries: reading past them is a sanitizer report
  x->t.shape = x->shape.empty() ? nullptr : x->shape.data();
  if (in.u8() & 1) {
    for (size_t i = 0; i < ndim; ++i) x->strides.push_back(in.value());
    x->strides.shrink_to_fit();
    static int64_t no_entries;  // non-NULL strides of a tensor with ndim <= 0
    x->t.strides = x->strides.empty() ? &no_entries : x->strides.data();
  }
  x->t.byte_offset = static_cast<uint64_t>(in.value());
  x->t.device.device_type = static_cast<DLDeviceType>(in.u8());
  x->t.device.device_id = in.u8();
  if (in.u8() & 1) {
    size_t bytes = honest_bytes(*x);
    x->data_bytes = bytes ? bytes : 64;
    x->storage.reset(new uint8_t[kGuard + x->data_bytes + kGuard]);
    std::memset(x->storage.get(), kGuardByte, kGuard);
    std::memset(x->storage.get() + kGuard + x->data_bytes, kGuardByte, kGuard);
    // Deterministic contents, so a wrong result is reproducible.
    for (size_t k = 0; k < x->data_bytes; ++k) x->data()[k] = static_cast<uint8_t>(k * 7 + 1);
    x->t.data = x->data();
  }
  return x;
}

// Whether `x` is what scale_add declares for a buffer of `dtype` and `shape` (the
// rules of the generated checks: compact strides or NULL, CPU, byte_offset 0, data).
bool matches(const Tensor* x, uint8_t code, uint8_t bits, const std::vector<int64_t>& shape) {
  if (x == nullptr || x->t.ndim != static_cast<int32_t>(shape.size())) return false;
  if (x->t.dtype.code != code || x->t.dtype.bits != bits || x->t.dtype.lanes != 1) return false;
  int64_t compact = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (x->shape[i] != shape[i]) return false;
    if (x->t.strides != nullptr && shape[i] > 1 && x->t.strides[i] != compact) return false;
    compact *= shape[i];
  }
  // The device type is read as the int it is: in C++ loading a DLDeviceType that holds
  // no enumerator (any int the caller passes) is undefined.
  int32_t device_type;
  static_assert(sizeof device_type == sizeof x->t.device.device_type, "DLDeviceType is an int");
  std::memcpy(&device_type, &x->t.device.device_type, sizeof device_type);
  return device_type == kDLCPU && x->t.byte_offset == 0 && x->t.data != nullptr;
}

bool is_tensor_code(int32_t code) { return code == kTVMDLTensorHandle || code == kTVMNDArrayHandle; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static TVMFunctionHandle scale_add = [] {
    TVMFunctionHandle f = nullptr;
    if (TVMFuncGetGlobal("scale_add", &f) != 0) bug("scale_add is not in the system library");
    return f;
  }();
  Reader in(data, size);
  const int num_args = in.u8() % (kMaxArgs + 1);
  // Exactly num_args entries each (heap), so a read past them is a sanitizer report.
  std::unique_ptr<TVMValue[]> values(new TVMValue[num_args > 0 ? num_args : 1]);
  std::unique_ptr<int[]> codes(new int[num_args > 0 ? num_args : 1]);
  std::vector<std::unique_ptr<Tensor>> tensors(num_args);
  for (int i = 0; i < num_args; ++i) {
    codes[i] = static_cast<int8_t>(in.u8());
    if (is_tensor_code(codes[i])) {
      if (in.u8() & 1) tensors[i] = decode_tensor(in);
      values[i].v_handle = tensors[i] ? &tensors[i]->t : nullptr;
    } else {
      values[i].v_int64 = static_cast<int64_t>(in.raw64());
    }
  }
  // Snapshot of the inputs A and B, which the call must not change.
  std::vector<std::vector<uint8_t>> before(num_args);
  for (int i = 0; i < num_args; ++i)
    if (tensors[i] && tensors[i]->storage)
      before[i].assign(tensors[i]->data(), tensors[i]->data() + tensors[i]->data_bytes);

  TVMValue ret;
  int ret_code = 0;
  TVMAPISetLastError("");
  const int rc = TVMFuncCall(scale_add, values.get(), codes.get(), num_args, &ret, &ret_code);

  for (const auto& x : tensors)
    if (x && !x->guards_intact()) bug("a write outside a tensor's data (guard bytes changed)");
  const bool valid = num_args == 5 && is_tensor_code(codes[0]) && is_tensor_code(codes[1]) &&
                     is_tensor_code(codes[2]) && codes[3] == kTVMArgFloat && codes[4] == kTVMArgInt &&
                     values[4].v_int64 == static_cast<int32_t>(values[4].v_int64) &&
                     matches(tensors[0].get(), kDLFloat, 32, {4, 3}) && matches(tensors[1].get(), kDLInt, 8, {3}) &&
                     matches(tensors[2].get(), kDLFloat, 32, {4, 3});
  if (std::getenv("MICROTIR_FUZZ_VERBOSE")) std::fprintf(stderr, "rc %d: %s\n", rc, rc ? TVMGetLastError() : "ok");
  if (rc != 0) {
    if (valid) bug("a valid call failed");
    if (TVMGetLastError()[0] == '\0') bug("a failed call did not set the last error");
    return 0;
  }
  if (!valid) bug("an invalid call succeeded");
  for (int i = 0; i < 2; ++i)
    if (std::memcmp(before[i].data(), tensors[i]->data(), before[i].size()) != 0) bug("an input buffer changed");
  // C[i, j] = A[i, j] * alpha + B[j] + n, in float as the generated code computes it.
  const float alpha = static_cast<float>(values[3].v_float64), n = static_cast<float>(values[4].v_int64);
  const auto* a = reinterpret_cast<const float*>(tensors[0]->data());
  const auto* b = reinterpret_cast<const int8_t*>(tensors[1]->data());
  const auto* c = reinterpret_cast<const float*>(tensors[2]->data());
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      const float want = ((a[i * 3 + j] * alpha) + static_cast<float>(b[j])) + n, got = c[i * 3 + j];
      if (!(got == want || (std::isnan(got) && std::isnan(want)))) bug("a valid call computed a wrong C");
    }
  }
  return 0;
}
