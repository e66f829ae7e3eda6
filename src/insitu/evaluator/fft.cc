// fft in the reference evaluator (fft.h): attributes and shapes checked, then the transforms.
#include "insitu/evaluator/fft.h"

#include <charconv>
#include <cmath>
#include <complex>
#include <cstring>
#include <numbers>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/ops.h"

namespace insitu::eval {
namespace {

using Complex = std::complex<double>;

// e^{2 pi i k/n} (conjugated for the forward transform), accurately: the angle is folded into
// the first octant by integer arithmetic, so quarter turns are exact and symmetric angles give
// symmetric values.
Complex unit_root(int64_t k, int64_t n, bool inverse) {
  const int64_t eighths = (8 * (k % n)) / n, rest = (8 * (k % n)) % n;
  const double quarter = std::numbers::pi / 4;
  const double phi = quarter * static_cast<double>(rest) / static_cast<double>(n);
  const double psi = quarter * static_cast<double>(n - rest) / static_cast<double>(n);
  const double cp = std::cos(phi), sp = std::sin(phi), cq = std::cos(psi), sq = std::sin(psi);
  Complex value;
  switch (eighths) {
    case 0: value = {cp, sp}; break;
    case 1: value = {sq, cq}; break;
    case 2: value = {0.0 - sp, cp}; break;
    case 3: value = {0.0 - cq, sq}; break;
    case 4: value = {0.0 - cp, 0.0 - sp}; break;
    case 5: value = {0.0 - sq, 0.0 - cq}; break;
    case 6: value = {sp, 0.0 - cp}; break;
    default: value = {cq, 0.0 - sq}; break;
  }
  return inverse ? value : Complex(value.real(), 0.0 - value.imag());
}

// In place: forward (e^{-2 pi i jk/n}) or inverse without the 1/n.
void transform(std::vector<Complex>& line, bool inverse) {
  const size_t n = line.size();
  if (n <= 1) return;
  if ((n & (n - 1)) == 0) {  // iterative radix-2
    for (size_t i = 1, j = 0; i < n; ++i) {
      size_t bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(line[i], line[j]);
    }
    for (size_t length = 2; length <= n; length <<= 1) {
      for (size_t start = 0; start < n; start += length)
        for (size_t k = 0; k < length / 2; ++k) {
          const Complex w = unit_root(static_cast<int64_t>(k), static_cast<int64_t>(length), inverse);
          const Complex even = line[start + k], odd = line[start + k + length / 2] * w;
          line[start + k] = even + odd;
          line[start + k + length / 2] = even - odd;
        }
    }
    return;
  }
  std::vector<Complex> twiddle(n), out(n);
  for (size_t k = 0; k < n; ++k) twiddle[k] = unit_root(static_cast<int64_t>(k), static_cast<int64_t>(n), inverse);
  for (size_t k = 0; k < n; ++k) {
    Complex sum = 0;
    for (size_t j = 0; j < n; ++j) sum += line[j] * twiddle[(k * j) % n];
    out[k] = sum;
  }
  line = std::move(out);
}

// Transforms every line of `data` (row-major, `dimensions`) along `axis`.
void along(std::vector<Complex>& data, const std::vector<int64_t>& dimensions, size_t axis, bool inverse) {
  int64_t stride = 1;
  for (size_t d = axis + 1; d < dimensions.size(); ++d) stride *= dimensions[d];
  const int64_t count = dimensions[axis];
  const int64_t outer = count == 0 || stride == 0 ? 0 : static_cast<int64_t>(data.size()) / (count * stride);
  std::vector<Complex> line(static_cast<size_t>(count));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < stride; ++i) {
      const int64_t base = o * count * stride + i;
      for (int64_t j = 0; j < count; ++j) line[j] = data[base + j * stride];
      transform(line, inverse);
      for (int64_t j = 0; j < count; ++j) data[base + j * stride] = line[j];
    }
}

Complex load_complex(bool f64, const uint8_t* base, int64_t i) {
  if (f64) {
    double parts[2];
    std::memcpy(parts, base + i * 16, 16);
    return {parts[0], parts[1]};
  }
  float parts[2];
  std::memcpy(parts, base + i * 8, 8);
  return {parts[0], parts[1]};
}

void store_complex(bool f64, uint8_t* base, int64_t i, Complex value) {
  if (f64) {
    const double parts[2] = {value.real(), value.imag()};
    std::memcpy(base + i * 16, parts, 16);
  } else {
    const float parts[2] = {static_cast<float>(value.real()), static_cast<float>(value.imag())};
    std::memcpy(base + i * 8, parts, 8);
  }
}

PrimitiveType real_type(bool f64) { return f64 ? PrimitiveType::kF64 : PrimitiveType::kF32; }

int64_t product(const std::vector<int64_t>& values) {
  int64_t result = 1;
  for (int64_t value : values) result *= value;
  return result;
}

}  // namespace

StatusOr<FftPlan> plan_fft(const Instruction& instruction, const Shape& operand) {
  FftPlan plan;
  const RawAttribute* type = find_own_attribute(instruction, "fft_type");
  const std::string type_text = type == nullptr ? "" : type->value;
  if (type_text == "FFT") plan.type = FftType::kFft;
  else if (type_text == "IFFT") plan.type = FftType::kIfft;
  else if (type_text == "RFFT") plan.type = FftType::kRfft;
  else if (type_text == "IRFFT") plan.type = FftType::kIrfft;
  else
    return bad_instruction(instruction, str_cat("fft_type=", type == nullptr ? "(missing)" : type_text,
                                                ": expected fft_type=FFT, IFFT, RFFT or IRFFT"));
  const RawAttribute* length = find_own_attribute(instruction, "fft_length");
  std::string_view text = length == nullptr ? "" : std::string_view(length->value);
  bool lengths_ok = text.size() >= 2 && text.front() == '{' && text.back() == '}';
  if (lengths_ok) text = text.substr(1, text.size() - 2);
  while (lengths_ok && !text.empty()) {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    int64_t value = -1;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    lengths_ok = error == std::errc() && value >= 0;
    plan.lengths.push_back(value);
    text.remove_prefix(static_cast<size_t>(end - text.data()));
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    if (!text.empty()) lengths_ok = lengths_ok && text.front() == ',' && text.size() > 1;
    if (!text.empty()) text.remove_prefix(1);
  }
  const size_t k = plan.lengths.size();
  const Shape& result = instruction.shape();
  if (!lengths_ok || k < 1 || k > 3 || !operand.is_array() || static_cast<int64_t>(k) > operand.rank())
    return bad_instruction(instruction, str_cat("fft_length=", length == nullptr ? "(missing)" : length->value,
                                                ": expected 1 to 3 lengths, at most the operand's rank (",
                                                operand.to_string(false), ")"));
  const bool real_in = plan.type == FftType::kRfft, real_out = plan.type == FftType::kIrfft;
  const PrimitiveType in_type = operand.element_type();
  plan.f64 = in_type == PrimitiveType::kF64 || in_type == PrimitiveType::kC128;
  const PrimitiveType real = plan.f64 ? PrimitiveType::kF64 : PrimitiveType::kF32;
  const PrimitiveType complex = plan.f64 ? PrimitiveType::kC128 : PrimitiveType::kC64;
  std::vector<int64_t> in_dimensions = operand.dimensions(), out_dimensions = operand.dimensions();
  const size_t first = in_dimensions.size() - k;
  for (size_t i = 0; i < k; ++i) in_dimensions[first + i] = out_dimensions[first + i] = plan.lengths[i];
  if (real_out) in_dimensions.back() = plan.lengths.back() / 2 + 1;
  if (real_in) out_dimensions.back() = plan.lengths.back() / 2 + 1;
  const Shape want_in = Shape::array(real_in ? real : complex, in_dimensions);
  const Shape want_out = Shape::array(real_out ? real : complex, out_dimensions);
  if (!operand.compatible(want_in) || !result.compatible(want_out))
    return bad_instruction(instruction, str_cat(type_text, " with fft_length=", length->value, " takes ",
                                                want_in.to_string(false), " to ", want_out.to_string(false), ", not ",
                                                operand.to_string(false), " to ", result.to_string(false)));
  const std::vector<int64_t> leading(in_dimensions.begin(), in_dimensions.begin() + static_cast<int64_t>(first));
  plan.batch = product(leading);
  plan.in_elements = plan.batch == 0 ? 0 : product(in_dimensions) / plan.batch;
  plan.out_elements = plan.batch == 0 ? 0 : product(out_dimensions) / plan.batch;
  return plan;
}

void run_fft(const FftPlan& plan, int64_t index, const uint8_t* in, uint8_t* out) {
  const bool f64 = plan.f64;
  const size_t k = plan.lengths.size();
  std::vector<int64_t> dimensions = plan.lengths;  // of the working array
  const int64_t n = plan.lengths.back(), half = n / 2 + 1;
  std::vector<Complex> data;
  switch (plan.type) {
    case FftType::kFft:
    case FftType::kIfft: {
      data.resize(static_cast<size_t>(plan.in_elements));
      for (int64_t i = 0; i < plan.in_elements; ++i) data[i] = load_complex(f64, in, index * plan.in_elements + i);
      const bool inverse = plan.type == FftType::kIfft;
      for (size_t axis = 0; axis < k; ++axis) along(data, dimensions, axis, inverse);
      const int64_t total = product(plan.lengths);
      for (int64_t i = 0; i < plan.out_elements; ++i)
        store_complex(f64, out, index * plan.out_elements + i,
                      inverse && total > 0 ? data[i] / static_cast<double>(total) : data[i]);
      return;
    }
    case FftType::kRfft: {
      const int64_t rows = n == 0 ? 0 : plan.in_elements / n;
      dimensions.back() = half;
      data.resize(static_cast<size_t>(rows * half));
      std::vector<Complex> line(static_cast<size_t>(n));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < n; ++j) line[j] = load_double(real_type(f64), in, index * plan.in_elements + r * n + j);
        transform(line, false);
        for (int64_t j = 0; j < half; ++j) data[r * half + j] = line[j];
      }
      for (size_t axis = 0; axis + 1 < k; ++axis) along(data, dimensions, axis, false);
      for (int64_t i = 0; i < plan.out_elements; ++i) store_complex(f64, out, index * plan.out_elements + i, data[i]);
      return;
    }
    case FftType::kIrfft: {
      dimensions.back() = half;
      data.resize(static_cast<size_t>(plan.in_elements));
      for (int64_t i = 0; i < plan.in_elements; ++i) data[i] = load_complex(f64, in, index * plan.in_elements + i);
      for (size_t axis = 0; axis + 1 < k; ++axis) along(data, dimensions, axis, true);
      const int64_t rows = half == 0 ? 0 : plan.in_elements / half;
      const int64_t total = product(plan.lengths);
      std::vector<Complex> line(static_cast<size_t>(n));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < n; ++j)
          line[j] = j < half ? data[r * half + j] : std::conj(data[r * half + (n - j)]);
        transform(line, true);
        for (int64_t j = 0; j < n; ++j)
          store_double(real_type(f64), out, index * plan.out_elements + r * n + j, total > 0 ? line[j].real() / total : 0.0);
      }
      return;
    }
  }
}

StatusOr<Literal> evaluate_fft(const Instruction& instruction, Operands operands) {
  if (operands.size() != 1) return bad_instruction(instruction, "takes one operand");
  INSITU_ASSIGN_OR_RETURN(FftPlan plan, plan_fft(instruction, operands[0]->shape()));
  Literal result(instruction.shape());
  for (int64_t i = 0; i < plan.batch; ++i) run_fft(plan, i, operands[0]->untyped_data(), result.untyped_data());
  return result;
}

}  // namespace insitu::eval
