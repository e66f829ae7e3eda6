// The LAPACK custom calls (lapack.h): planning from the call site, and the routines on one
// matrix in double.
#include "insitu/evaluator/lapack.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <vector>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/linalg.h"
#include "insitu/evaluator/ops.h"
#include "insitu/support/str.h"

namespace insitu::eval {
namespace {

using Matrix = std::vector<double>;  // row-major

constexpr std::pair<std::string_view, LapackRoutine> kRoutines[] = {
    {"potrf", LapackRoutine::kPotrf}, {"trsm", LapackRoutine::kTrsm},   {"getrf", LapackRoutine::kGetrf},
    {"geqrf", LapackRoutine::kGeqrf}, {"orgqr", LapackRoutine::kOrgqr}, {"ungqr", LapackRoutine::kOrgqr},
    {"syevd", LapackRoutine::kSyevd}, {"heevd", LapackRoutine::kSyevd}, {"gesdd", LapackRoutine::kGesdd},
};

// "lapack_spotrf_ffi" -> ('s', potrf)
std::optional<std::pair<char, LapackRoutine>> parse_target(std::string_view target) {
  constexpr std::string_view prefix = "lapack_", suffix = "_ffi";
  if (!target.starts_with(prefix) || !target.ends_with(suffix)) return std::nullopt;
  std::string_view middle = target.substr(prefix.size(), target.size() - prefix.size() - suffix.size());
  if (middle.empty() || std::string_view("sdcz").find(middle[0]) == std::string_view::npos) return std::nullopt;
  for (const auto& [name, routine] : kRoutines)
    if (middle.substr(1) == name) return std::pair{middle[0], routine};
  return std::nullopt;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return text;
}

// backend_config={uplo = 76 : ui8, side = 76 : ui8}: name -> ASCII character.
StatusOr<std::map<std::string, char, std::less<>>> parse_config(const Instruction& call) {
  std::map<std::string, char, std::less<>> values;
  std::string_view text = call.backend_config;
  if (text.starts_with('{') && text.ends_with('}')) text = text.substr(1, text.size() - 2);
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view entry = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (entry.empty()) continue;
    const size_t equals = entry.find('='), colon = entry.find(':');
    int value = -1;
    if (equals != std::string_view::npos && colon != std::string_view::npos && colon > equals) {
      const std::string_view number = trim(entry.substr(equals + 1, colon - equals - 1));
      std::from_chars(number.data(), number.data() + number.size(), value);
    }
    if (value <= 0 || value > 127)
      return bad_instruction(call, str_cat("backend_config entry '", entry, "' is not NAME = CODE : ui8"));
    values[std::string(trim(entry.substr(0, equals)))] = static_cast<char>(value);
  }
  return values;
}

Status pick(const Instruction& call, const std::map<std::string, char, std::less<>>& config, std::string_view name,
            std::string_view allowed, char& into) {
  auto it = config.find(name);
  if (it == config.end())
    return bad_instruction(call, str_cat("needs ", name, " in backend_config (one of ", allowed, ")"));
  if (allowed.find(it->second) == std::string_view::npos)
    return bad_instruction(call, str_cat(name, "='", std::string(1, it->second), "' in backend_config: expected one of ",
                                         allowed));
  into = it->second;
  return ok_status();
}

std::vector<int64_t> with(std::vector<int64_t> batch, std::initializer_list<int64_t> tail) {
  batch.insert(batch.end(), tail);
  return batch;
}

void store_s32(uint8_t* base, int64_t i, int64_t value) {
  const int32_t narrow = static_cast<int32_t>(value);
  std::memcpy(base + i * 4, &narrow, 4);
}

// ---- the routines, on double matrices ----

int64_t getrf(Matrix& a, int64_t m, int64_t n, std::vector<int64_t>& pivots) {
  int64_t info = 0;
  for (int64_t j = 0; j < std::min(m, n); ++j) {
    int64_t p = j;
    for (int64_t i = j + 1; i < m; ++i)
      if (std::abs(a[i * n + j]) > std::abs(a[p * n + j])) p = i;
    pivots[j] = p + 1;
    if (a[p * n + j] != 0) {
      if (p != j)
        for (int64_t c = 0; c < n; ++c) std::swap(a[j * n + c], a[p * n + c]);
      for (int64_t i = j + 1; i < m; ++i) a[i * n + j] /= a[j * n + j];
    } else if (info == 0) {
      info = j + 1;
    }
    for (int64_t i = j + 1; i < m; ++i)
      for (int64_t c = j + 1; c < n; ++c) a[i * n + c] -= a[i * n + j] * a[j * n + c];
  }
  return info;
}

void geqrf(Matrix& a, int64_t m, int64_t n, std::vector<double>& tau) {
  for (int64_t j = 0; j < std::min(m, n); ++j) {
    const double alpha = a[j * n + j];
    double norm = 0;
    for (int64_t i = j + 1; i < m; ++i) norm = std::hypot(norm, a[i * n + j]);
    if (norm == 0) {
      tau[j] = 0;
      continue;
    }
    const double beta = -std::copysign(std::hypot(alpha, norm), alpha);
    tau[j] = (beta - alpha) / beta;
    for (int64_t i = j + 1; i < m; ++i) a[i * n + j] /= alpha - beta;
    a[j * n + j] = beta;
    // H = I - tau v v^T, v = (1, a[j+1:, j]), applied to the columns right of j
    for (int64_t c = j + 1; c < n; ++c) {
      double w = a[j * n + c];
      for (int64_t i = j + 1; i < m; ++i) w += a[i * n + j] * a[i * n + c];
      a[j * n + c] -= tau[j] * w;
      for (int64_t i = j + 1; i < m; ++i) a[i * n + c] -= tau[j] * w * a[i * n + j];
    }
  }
}

// Q's first n columns from geqrf's reflectors (below the diagonal of a) and tau.
Matrix orgqr(const Matrix& a, int64_t m, int64_t n, const std::vector<double>& tau) {
  Matrix q(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < std::min(m, n); ++i) q[i * n + i] = 1;
  for (int64_t j = static_cast<int64_t>(tau.size()) - 1; j >= 0; --j)
    for (int64_t c = j; c < n; ++c) {
      double w = q[j * n + c];
      for (int64_t i = j + 1; i < m; ++i) w += a[i * n + j] * q[i * n + c];
      q[j * n + c] -= tau[j] * w;
      for (int64_t i = j + 1; i < m; ++i) q[i * n + c] -= tau[j] * w * a[i * n + j];
    }
  return q;
}

// Makes each column of v (rows x columns) have its largest component positive (the first
// such on ties); `also` (when given) flips its matching rows along with it.
void fix_signs(Matrix& v, int64_t rows, int64_t columns, Matrix* also, int64_t also_columns) {
  for (int64_t c = 0; c < columns; ++c) {
    int64_t best = 0;
    for (int64_t r = 1; r < rows; ++r)
      if (std::abs(v[r * columns + c]) > std::abs(v[best * columns + c])) best = r;
    if (rows == 0 || v[best * columns + c] >= 0) continue;
    for (int64_t r = 0; r < rows; ++r) v[r * columns + c] = -v[r * columns + c];
    if (also != nullptr)
      for (int64_t j = 0; j < also_columns; ++j) (*also)[c * also_columns + j] = -(*also)[c * also_columns + j];
  }
}

// A plane rotation of columns p and q of m (rows x columns, row-major): (x_p, x_q) <-
// (c x_p - s x_q, s x_p + c x_q) in every row; rotate_rows does the same to rows p and q.
void rotate_columns(Matrix& m, int64_t rows, int64_t columns, int64_t p, int64_t q, double c, double s) {
  for (int64_t k = 0; k < rows; ++k) {
    const double xp = m[k * columns + p], xq = m[k * columns + q];
    m[k * columns + p] = c * xp - s * xq;
    m[k * columns + q] = s * xp + c * xq;
  }
}

void rotate_rows(Matrix& m, int64_t columns, int64_t p, int64_t q, double c, double s) {
  for (int64_t k = 0; k < columns; ++k) {
    const double xp = m[p * columns + k], xq = m[q * columns + k];
    m[p * columns + k] = c * xp - s * xq;
    m[q * columns + k] = s * xp + c * xq;
  }
}

// Symmetric eigenproblem by cyclic Jacobi: a (n x n, both triangles filled) -> w ascending,
// v's columns the eigenvectors.
void syevd(Matrix& a, int64_t n, std::vector<double>& w, Matrix& v) {
  v.assign(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) v[i * n + i] = 1;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0, total = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) (i == j ? total : off) += a[i * n + j] * a[i * n + j];
    if (off == 0 || off <= 1e-32 * (total + off)) break;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (apq == 0) continue;
        const double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        rotate_columns(a, n, n, p, q, c, s);
        rotate_rows(a, n, p, q, c, s);
        rotate_columns(v, n, n, p, q, c, s);
      }
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return a[x * n + x] < a[y * n + y]; });
  Matrix sorted(static_cast<size_t>(n * n));
  w.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    w[j] = a[order[j] * n + order[j]];
    for (int64_t i = 0; i < n; ++i) sorted[i * n + j] = v[i * n + order[j]];
  }
  v = std::move(sorted);
  fix_signs(v, n, n, nullptr, 0);
}

// a = u diag(s) vt by one-sided Jacobi on the columns of a (m >= n): s descending (n of
// them), u m x n, vt n x n.
void gesdd_tall(const Matrix& a, int64_t m, int64_t n, std::vector<double>& s, Matrix& u, Matrix& vt) {
  u = a;
  Matrix v(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) v[i * n + i] = 1;
  for (int sweep = 0; sweep < 100; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        double alpha = 0, beta = 0, gamma = 0;
        for (int64_t i = 0; i < m; ++i) {
          alpha += u[i * n + p] * u[i * n + p];
          beta += u[i * n + q] * u[i * n + q];
          gamma += u[i * n + p] * u[i * n + q];
        }
        if (gamma == 0 || std::abs(gamma) <= 1e-15 * std::sqrt(alpha * beta)) continue;
        rotated = true;
        const double zeta = (beta - alpha) / (2 * gamma);
        const double t = (zeta >= 0 ? 1.0 : -1.0) / (std::abs(zeta) + std::sqrt(1 + zeta * zeta));
        const double c = 1 / std::sqrt(1 + t * t), sn = c * t;
        rotate_columns(u, m, n, p, q, c, sn);
        rotate_columns(v, n, n, p, q, c, sn);
      }
    if (!rotated) break;
  }
  std::vector<double> norms(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    double norm = 0;
    for (int64_t i = 0; i < m; ++i) norm = std::hypot(norm, u[i * n + j]);
    norms[j] = norm;
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return norms[x] > norms[y]; });
  Matrix sorted_u(static_cast<size_t>(m * n));
  vt.assign(static_cast<size_t>(n * n), 0.0);
  s.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    const int64_t from = order[j];
    s[j] = norms[from];
    for (int64_t i = 0; i < m; ++i) sorted_u[i * n + j] = norms[from] == 0 ? 0.0 : u[i * n + from] / norms[from];
    for (int64_t i = 0; i < n; ++i) vt[j * n + i] = v[i * n + from];
  }
  u = std::move(sorted_u);
  // signs: vt's rows (v's columns) get their largest component positive, u's columns follow
  Matrix v_columns(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) v_columns[i * n + j] = vt[j * n + i];
  Matrix u_rows(static_cast<size_t>(n * m));  // u transposed: row j is u's column j
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) u_rows[j * m + i] = u[i * n + j];
  fix_signs(v_columns, n, n, &u_rows, m);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) vt[j * n + i] = v_columns[i * n + j];
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) u[i * n + j] = u_rows[j * m + i];
}

Matrix transposed(const Matrix& a, int64_t rows, int64_t columns) {
  Matrix t(a.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < columns; ++j) t[j * rows + i] = a[i * columns + j];
  return t;
}

}  // namespace

bool is_lapack_target(std::string_view target) { return parse_target(target).has_value(); }

StatusOr<LapackCall> plan_lapack_call(const Instruction& call, std::span<const Shape* const> operands,
                                      std::span<const Shape* const> outputs) {
  const auto parsed = parse_target(call.custom_call.target);
  if (!parsed) return bad_instruction(call, str_cat("\"", call.custom_call.target, "\" is not a LAPACK target"));
  LapackCall plan;
  plan.routine = parsed->second;
  if (parsed->first == 'c' || parsed->first == 'z')
    return unimplemented(str_cat("custom-call %", call.name(), ": insitu runs the s and d (real) LAPACK targets, not ",
                                 call.custom_call.target),
                         call.location());
  plan.type = parsed->first == 's' ? PrimitiveType::kF32 : PrimitiveType::kF64;
  INSITU_ASSIGN_OR_RETURN(auto config, parse_config(call));
  const LapackRoutine routine = plan.routine;
  using enum LapackRoutine;
  const size_t operand_count = routine == kTrsm ? (operands.size() == 3 ? 3 : 2) : routine == kOrgqr ? 2 : 1;
  if (operands.empty() || operands.size() != operand_count)
    return bad_instruction(call, str_cat("takes ", operand_count, " operand(s), not ", operands.size()));
  const Shape& a = *operands[0];
  if (!a.is_array() || a.rank() < 2 || a.element_type() != plan.type)
    return bad_instruction(call, str_cat("operand 0 must be a ", primitive_type_name(plan.type),
                                         " array of matrices, not ", a.to_string(false)));
  const std::vector<int64_t> batch(a.dimensions().begin(), a.dimensions().end() - 2);
  for (int64_t dimension : batch) plan.batch *= dimension;
  plan.m = a.dimension(a.rank() - 2);
  plan.n = a.dimensions().back();
  const int64_t m = plan.m, n = plan.n, least = std::min(m, n);
  const Shape info = Shape::array(PrimitiveType::kS32, batch);
  auto of_type = [&](std::initializer_list<int64_t> tail) { return Shape::array(plan.type, with(batch, tail)); };
  std::vector<Shape> want_operands = {a}, want_outputs;
  switch (routine) {
    case kPotrf:
    case kSyevd:
      if (m != n) return bad_instruction(call, str_cat("operand ", a.to_string(false), " must hold square matrices"));
      INSITU_RETURN_IF_ERROR(pick(call, config, "uplo", "LU", plan.uplo));
      if (routine == kSyevd) INSITU_RETURN_IF_ERROR(pick(call, config, "mode", "VN", plan.mode));
      want_outputs = routine == kPotrf ? std::vector<Shape>{a, info} : std::vector<Shape>{a, of_type({n}), info};
      break;
    case kTrsm: {
      INSITU_RETURN_IF_ERROR(pick(call, config, "side", "LR", plan.side));
      INSITU_RETURN_IF_ERROR(pick(call, config, "uplo", "LU", plan.uplo));
      INSITU_RETURN_IF_ERROR(pick(call, config, "trans_x", "NTC", plan.trans));
      INSITU_RETURN_IF_ERROR(pick(call, config, "diag", "NU", plan.diag));
      if (m != n) return bad_instruction(call, str_cat("operand a ", a.to_string(false), " must hold square matrices"));
      plan.k = n;
      const Shape& b = *operands[1];
      if (!b.is_array() || b.rank() != a.rank())
        return bad_instruction(call, str_cat("operand b ", b.to_string(false), " must be matrices like a's"));
      plan.m = b.dimension(b.rank() - 2);
      plan.n = b.dimensions().back();
      want_operands = {a, of_type({plan.m, plan.n})};
      if (plan.k != (plan.side == 'L' ? plan.m : plan.n))
        return bad_instruction(call, str_cat("a ", a.to_string(false), " does not fit b ", b.to_string(false),
                                             " with side='", std::string(1, plan.side), "'"));
      if (operands.size() == 3) {
        plan.alpha = true;
        want_operands.push_back(Shape::scalar(plan.type));
      }
      want_outputs = {want_operands[1]};
      break;
    }
    case kGetrf: want_outputs = {a, Shape::array(PrimitiveType::kS32, with(batch, {least})), info}; break;
    case kGeqrf: want_outputs = {a, of_type({least})}; break;
    case kOrgqr: {
      const Shape& tau = *operands[1];
      plan.k = tau.is_array() && tau.rank() == a.rank() - 1 ? tau.dimensions().back() : -1;
      if (plan.k < 0 || plan.k > n || n > m)
        return bad_instruction(call, str_cat("takes a (m x n, m >= n) and tau (k <= n reflectors), not ",
                                             a.to_string(false), " and ", tau.to_string(false)));
      want_operands.push_back(of_type({plan.k}));
      want_outputs = {a};
      break;
    }
    case kGesdd: {
      INSITU_RETURN_IF_ERROR(pick(call, config, "mode", "NSA", plan.mode));
      if (plan.mode == 'A' && m != n)
        return unimplemented(str_cat("custom-call %", call.name(), ": insitu's gesdd computes full (mode A) u and vt "
                                     "of square matrices only, not ", a.to_string(false)),
                             call.location());
      plan.k = least;
      want_outputs = {a, of_type({least})};
      if (plan.mode == 'N') {  // u and vt are not computed: any arrays of the batch
        if (outputs.size() != 5 || !outputs[2]->is_array() || !outputs[3]->is_array())
          return bad_instruction(call, "result must be (a, s, u, vt, info)");
        want_outputs.insert(want_outputs.end(), {*outputs[2], *outputs[3]});
        plan.u_size = outputs[2]->element_count() / std::max<int64_t>(plan.batch, 1);
        plan.vt_size = outputs[3]->element_count() / std::max<int64_t>(plan.batch, 1);
      } else {
        want_outputs.insert(want_outputs.end(), {of_type({m, least}), of_type({least, n})});
      }
      want_outputs.push_back(info);
      break;
    }
  }
  for (size_t i = 0; i < operands.size(); ++i)
    if (!operands[i]->compatible(want_operands[i]))
      return bad_instruction(call, str_cat("operand ", i, " is ", operands[i]->to_string(false), "; expected ",
                                           want_operands[i].to_string(false)));
  bool outputs_fit = outputs.size() == want_outputs.size();
  for (size_t i = 0; outputs_fit && i < outputs.size(); ++i)
    outputs_fit = outputs[i]->compatible(want_outputs[i]) && outputs[i]->is_array();
  if (!outputs_fit) {
    std::vector<std::string> names;
    for (const Shape& shape : want_outputs) names.push_back(shape.to_string(false));
    return bad_instruction(call, str_cat("result ", call.shape().to_string(false), " must be (", str_join(names, ", "),
                                         ")"));
  }
  return plan;
}

void run_lapack_matrix(const LapackCall& call, int64_t index, std::span<const uint8_t* const> operands,
                       std::span<uint8_t* const> outputs) {
  const PrimitiveType type = call.type;
  const int64_t m = call.m, n = call.n, least = std::min(m, n);
  auto read = [&](const uint8_t* base, int64_t count) {
    Matrix values(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) values[i] = load_double(type, base, index * count + i);
    return values;
  };
  auto write = [&](uint8_t* base, const std::vector<double>& values) {
    const int64_t count = static_cast<int64_t>(values.size());
    for (int64_t i = 0; i < count; ++i) store_double(type, base, index * count + i, values[i]);
  };
  using enum LapackRoutine;
  switch (call.routine) {
    case kPotrf: {  // the named triangle as a lower one, factored, written back; the other kept
      Matrix a = read(operands[0], n * n);
      const bool lower = call.uplo == 'L';
      Matrix w(a.size(), 0.0);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j <= i; ++j) w[i * n + j] = lower ? a[i * n + j] : a[j * n + i];
      const int64_t failed = cholesky_lower(w, n, /*lapack=*/true);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j <= i; ++j) (lower ? a[i * n + j] : a[j * n + i]) = w[i * n + j];
      write(outputs[0], a);
      store_s32(outputs[1], index, failed + 1);
      return;
    }
    case kTrsm: {
      const Matrix a = read(operands[0], call.k * call.k);
      Matrix b = read(operands[1], m * n);
      if (call.alpha) {
        const double alpha = load_double(type, operands[2], 0);
        for (double& value : b) value *= alpha;
      }
      const TriangularSolveOptions options{.left_side = call.side == 'L', .lower = call.uplo == 'L',
                                           .unit_diagonal = call.diag == 'U',
                                           .transpose_a = call.trans == 'N' ? TransposeA::kNoTranspose
                                                                            : TransposeA::kTranspose};
      Matrix x(b.size());
      triangular_solve_matrix(a.data(), b.data(), x.data(), MatrixBatch{1, call.k, m, n}, options);
      write(outputs[0], x);
      return;
    }
    case kGetrf: {
      Matrix a = read(operands[0], m * n);
      std::vector<int64_t> pivots(static_cast<size_t>(least));
      const int64_t info = getrf(a, m, n, pivots);
      write(outputs[0], a);
      for (int64_t j = 0; j < least; ++j) store_s32(outputs[1], index * least + j, pivots[j]);
      store_s32(outputs[2], index, info);
      return;
    }
    case kGeqrf: {
      Matrix a = read(operands[0], m * n);
      std::vector<double> tau(static_cast<size_t>(least));
      geqrf(a, m, n, tau);
      write(outputs[0], a);
      write(outputs[1], tau);
      return;
    }
    case kOrgqr: {
      const Matrix a = read(operands[0], m * n);
      const std::vector<double> tau = read(operands[1], call.k);
      write(outputs[0], orgqr(a, m, n, tau));
      return;
    }
    case kSyevd: {
      Matrix a = read(operands[0], n * n);
      for (int64_t i = 0; i < n; ++i)  // mirror the named triangle
        for (int64_t j = 0; j < i; ++j) {
          const double value = call.uplo == 'L' ? a[i * n + j] : a[j * n + i];
          a[i * n + j] = a[j * n + i] = value;
        }
      std::vector<double> w;
      Matrix v;
      syevd(a, n, w, v);
      write(outputs[0], v);
      write(outputs[1], w);
      store_s32(outputs[2], index, 0);
      return;
    }
    case kGesdd: {
      const Matrix a = read(operands[0], m * n);
      std::vector<double> s;
      Matrix u, vt;
      if (m >= n) {
        gesdd_tall(a, m, n, s, u, vt);
      } else {  // a^T = u' s vt' -> a = vt'^T s u'^T
        Matrix u_t, vt_t;
        gesdd_tall(transposed(a, m, n), n, m, s, u_t, vt_t);
        u = transposed(vt_t, m, m);
        vt = transposed(u_t, n, m);
      }
      write(outputs[0], a);
      write(outputs[1], s);
      if (call.mode == 'N') {  // not computed: zeros
        write(outputs[2], std::vector<double>(static_cast<size_t>(call.u_size), 0.0));
        write(outputs[3], std::vector<double>(static_cast<size_t>(call.vt_size), 0.0));
      } else {
        write(outputs[2], u);
        write(outputs[3], vt);
      }
      store_s32(outputs[4], index, 0);
      return;
    }
  }
}

StatusOr<Literal> evaluate_lapack_custom_call(const Instruction& instruction, Operands operands) {
  Literal result(instruction.shape());
  std::vector<Literal*> leaves;
  if (result.shape().is_tuple()) {
    for (Literal& element : result.elements()) leaves.push_back(&element);
  } else {
    leaves.push_back(&result);
  }
  std::vector<const Shape*> operand_shapes, output_shapes;
  for (const Literal* operand : operands) operand_shapes.push_back(&operand->shape());
  for (const Literal* leaf : leaves) output_shapes.push_back(&leaf->shape());
  INSITU_ASSIGN_OR_RETURN(LapackCall plan, plan_lapack_call(instruction, operand_shapes, output_shapes));
  std::vector<const uint8_t*> inputs;
  std::vector<uint8_t*> outputs;
  for (const Literal* operand : operands) inputs.push_back(operand->untyped_data());
  for (Literal* leaf : leaves) outputs.push_back(leaf->untyped_data());
  for (int64_t i = 0; i < plan.batch; ++i) run_lapack_matrix(plan, i, inputs, outputs);
  return result;
}

}  // namespace insitu::eval
