// Native row fusions of the CPU runtime (kind=kCustom, not a dot: the row-fusion pass's,
// passes/row_fusion.h): a body of reduces, reduce fusions, loop fusions and the bitcasts between
// them, all over the same leading dimensions (the rows), run a chunk of rows at a time: chunk c
// goes through every member, in order, before chunk c + 1, so its rows are read from memory
// once and stay in cache from the first member to the last. Chunks split over the pool.
//
// Each member runs its own kernel on its own rows: a loop fusion its plan (planned over its whole
// result, as unfused) on the blocks of the chunk's elements, at their absolute positions (so a
// broadcast or an iota reads what it reads unfused); a reduce fusion its own chunks; a reduce its
// kernel selected on a chunk's shapes. So every row is summed in the same order and the result is
// bit for bit the unfused members' (and the evaluator's). Values between members live in
// per-thread scratch, a chunk's rows each, addressed as if the whole array were there (a member's
// kernel only touches the chunk's rows); the fusion's outputs are written in place. Members run
// without fetching ahead (BlockRunner::no_prefetch): what they read the member before them just
// touched, and the prefetch loop cost a sixth of a layer norm's instructions.
//
// The chunk holds a whole number of every reduce fusion's chunks (16 rows of 1,024 f32 for a
// layer norm's), or about kChunkElements elements per value. Anything the members' kernels do not
// plan natively fails the selection, and the evaluator runs the whole fusion.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "insitu/ir/computation.h"
#include "insitu/runtime/fusion_plan.h"
#include "insitu/runtime/fusion_runner.h"
#include "insitu/runtime/kernels.h"

namespace insitu {
namespace {

using fusion_kernel::BlockRunner;

using fusion_kernel::kChunkElements;
// Elements per row are estimated as 4-byte ones (the pass groups f32 rows): a chunk's size and
// its share of the pool.
constexpr int64_t kElementBytes = 4;

// Where one value of the body lives while a chunk runs.
enum class Home : uint8_t { kOperand, kConstant, kOutput, kScratch };

struct Value {
  Home home = Home::kScratch;
  int64_t index = 0;      // kOperand: the operand; kOutput: the output leaf; kScratch: byte offset
  int64_t row_bytes = 0;  // bytes per row; 0: not over the rows (read whole)
  const uint8_t* constant = nullptr;
};

enum class MemberKind : uint8_t { kAlias, kReduce, kLoop, kReduceFusion };

struct Member {
  const Instruction* instruction = nullptr;
  MemberKind kind = MemberKind::kAlias;
  std::vector<int> operands;             // value per operand
  std::vector<int> results;              // value per result leaf
  std::vector<ArrayView> operand_views;  // shapes set once (a reduce's: a chunk's); addresses per chunk
  std::vector<ArrayView> result_views;
  NativeKernel kernel;                   // a reduce's on a whole chunk's shapes
  NativeKernel tail;                     // a reduce's on the last chunk's
  Shape chunk_input, chunk_output, tail_input, tail_output;
  int64_t row_elements = 0;              // a loop's elements per row
  // a loop's blocks of a chunk: per length they take, its nodes' 1-D shapes
  std::vector<std::pair<int64_t, std::vector<Shape>>> piece_shapes;
};

struct RowFusion final : KernelPlan {
  std::vector<Value> values;
  std::vector<Member> members;
  int64_t rows = 0;
  int64_t chunk_rows = 0;
  int64_t scratch_bytes = 0;  // a chunk's values between members
  int64_t row_elements = 0;   // per row, over every member (what a chunk costs)
};

// The blocks a loop member runs for the elements [first, end) of whole rows: at most the plan's
// block long, never across one of its long rows when it runs rows' pieces.
template <typename Fn>
void for_each_piece(const LoopFusion& loop, int64_t first, int64_t end, Fn&& fn) {
  for (int64_t at = first; at < end;) {
    int64_t limit = end;
    if (loop.row > loop.block) limit = std::min(end, (at / loop.row + 1) * loop.row);
    const int64_t length = std::min(loop.block, limit - at);
    fn(at, length);
    at += length;
  }
}

const std::vector<Shape>& shapes_of(const Member& member, int64_t length) {
  for (const auto& [piece, shapes] : member.piece_shapes)
    if (piece == length) return shapes;
  INSITU_CHECK(false) << "a row fusion's loop block of " << length << " elements was not planned";
  return member.piece_shapes.front().second;
}

// A reduce's chunk shapes: its input's and result's ranks kept, leading dimensions 1, the last
// row dimension `rows`.
void chunk_shapes(const Instruction& reduce, int64_t rows, Shape& input, Shape& output) {
  const Shape& full = reduce.operand(0)->shape();
  const size_t k = static_cast<size_t>(reduce.shape().rank());
  std::vector<int64_t> dimensions(k, 1);
  dimensions.back() = rows;
  output = Shape::array(reduce.shape().element_type(), dimensions);
  for (size_t d = k; d < static_cast<size_t>(full.rank()); ++d) dimensions.push_back(full.dimension(static_cast<int64_t>(d)));
  input = Shape::array(full.element_type(), dimensions);
}

int64_t chunks_per_task(const RowFusion& plan) {
  return std::max<int64_t>(1, kParallelElements / std::max<int64_t>(1, plan.chunk_rows * plan.row_elements));
}

Status row_fusion_kernel(const KernelCall& call) {
  const RowFusion& plan = static_cast<const RowFusion&>(*call.plan);
  const int64_t chunks = (plan.rows + plan.chunk_rows - 1) / plan.chunk_rows;
  Status status = ok_status();
  std::mutex failed;
  const int64_t per_task = chunks_per_task(plan);
  run_range(call.pool, chunks, per_task, [&](int64_t begin, int64_t end) {
    thread_local std::vector<uint64_t> scratch_words;
    const size_t words = static_cast<size_t>(plan.scratch_bytes / 8 + 8);
    if (scratch_words.size() < words) scratch_words.resize(words);
    uint8_t* scratch = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(scratch_words.data()) + 63) / 64 * 64);
    thread_local std::vector<ArrayView> views;
    for (int64_t c = begin; c < end; ++c) {
      const int64_t first = c * plan.chunk_rows, last = std::min(plan.rows, first + plan.chunk_rows);
      // a value's address as if the whole array were there (scratch holds the chunk's rows)
      auto address = [&](int v) -> uint8_t* {
        const Value& value = plan.values[static_cast<size_t>(v)];
        switch (value.home) {
          case Home::kOperand: return call.operands[static_cast<size_t>(value.index)].data;
          case Home::kConstant: return const_cast<uint8_t*>(value.constant);
          case Home::kOutput: return call.outputs[static_cast<size_t>(value.index)].data;
          case Home::kScratch: break;
        }
        return reinterpret_cast<uint8_t*>(reinterpret_cast<uintptr_t>(scratch + value.index) -
                                          static_cast<uintptr_t>(first * value.row_bytes));
      };
      for (const Member& member : plan.members) {
        if (member.kind == MemberKind::kAlias) continue;
        const size_t count = member.operands.size();
        views.assign(member.operand_views.begin(), member.operand_views.end());
        views.insert(views.end(), member.result_views.begin(), member.result_views.end());
        for (size_t i = 0; i < count; ++i) views[i].data = address(member.operands[i]);
        for (size_t i = 0; i < member.results.size(); ++i) views[count + i].data = address(member.results[i]);
        const std::span<const ArrayView> operands(views.data(), count);
        const std::span<const ArrayView> results(views.data() + count, member.results.size());
        Status ran = ok_status();
        switch (member.kind) {
          case MemberKind::kReduce: {
            const bool tail = last - first != plan.chunk_rows;
            views[0].data += first * plan.values[static_cast<size_t>(member.operands[0])].row_bytes;
            views[0].shape = tail ? &member.tail_input : &member.chunk_input;
            views[count].data += first * plan.values[static_cast<size_t>(member.results[0])].row_bytes;
            views[count].shape = tail ? &member.tail_output : &member.chunk_output;
            const NativeKernel& kernel = tail ? member.tail : member.kernel;
            ran = kernel.run(KernelCall{*member.instruction, kernel.plan.get(), operands, results, call.pool});
            break;
          }
          case MemberKind::kLoop: {
            const LoopFusion& loop = static_cast<const LoopFusion&>(*member.kernel.plan);
            BlockRunner runner(loop, operands, results[0].data, call.pool);
            runner.no_prefetch();
            for_each_piece(loop, first * member.row_elements, last * member.row_elements,
                           [&](int64_t at, int64_t length) { runner.run(at, length, shapes_of(member, length)); });
            break;
          }
          case MemberKind::kReduceFusion:
            ran = fusion_kernel::run_reduce_fusion_rows(
                KernelCall{*member.instruction, member.kernel.plan.get(), operands, results, call.pool}, first, last);
            break;
          case MemberKind::kAlias: break;
        }
        if (!ran.ok()) {
          std::lock_guard<std::mutex> lock(failed);
          if (status.ok()) status = std::move(ran);
          return;
        }
      }
    }
  });
  return status;
}

// The plan, or null when a member is not one the kernel runs natively.
std::unique_ptr<RowFusion> plan_row_fusion(const Instruction& fusion, std::span<const ArrayView> operands,
                                           std::span<const ArrayView> outputs) {
  const Computation& body = *fusion.called_computations()[0];
  auto plan = std::make_unique<RowFusion>();
  // the rows: the first reduce's (or reduce fusion's) result
  const Instruction* first_reduce = nullptr;
  for (const Instruction* instruction : body.instructions()) {
    if (instruction->opcode() == Opcode::kReduce ||
        (instruction->opcode() == Opcode::kFusion && instruction->fusion_kind == "kInput")) {
      first_reduce = instruction;
      break;
    }
  }
  if (first_reduce == nullptr) return nullptr;
  const Shape& row_shape = first_reduce->shape().is_tuple() ? first_reduce->shape().tuple_shape(0) : first_reduce->shape();
  if (!row_shape.is_array() || row_shape.rank() == 0) return nullptr;
  const std::vector<int64_t>& rows = row_shape.dimensions();
  plan->rows = row_shape.element_count();
  if (plan->rows == 0) return nullptr;
  // bytes per row of an array over the rows; -1 when it is not
  auto row_bytes = [&](const Shape& shape) -> int64_t {
    if (!shape.is_array() || shape.rank() < static_cast<int64_t>(rows.size()) ||
        !std::equal(rows.begin(), rows.end(), shape.dimensions().begin()))
      return -1;
    return shape.byte_size() / plan->rows;
  };

  std::unordered_map<const Instruction*, std::vector<int>> leaves;  // instruction -> its values
  auto new_value = [&](Value value) {
    plan->values.push_back(value);
    return static_cast<int>(plan->values.size()) - 1;
  };
  for (const Instruction* instruction : body.instructions()) {
    const Opcode opcode = instruction->opcode();
    if (opcode == Opcode::kParameter) {
      const int64_t number = instruction->parameter_number;
      if (number < 0 || number >= static_cast<int64_t>(operands.size())) return nullptr;
      const int64_t bytes = operands[number].scalar ? 0 : std::max<int64_t>(0, row_bytes(instruction->shape()));
      leaves[instruction] = {new_value(Value{Home::kOperand, number, bytes, nullptr})};
      continue;
    }
    if (opcode == Opcode::kConstant) {
      if (!instruction->shape().is_array() || instruction->shape().rank() != 0) return nullptr;
      leaves[instruction] = {new_value(
          Value{Home::kConstant, 0, 0, static_cast<const uint8_t*>(instruction->literal.untyped_data())})};
      continue;
    }
    if (opcode == Opcode::kTuple && instruction == body.root()) continue;
    if (opcode == Opcode::kGetTupleElement) {  // names a leaf of a member
      const auto found = leaves.find(instruction->operand(0));
      if (found == leaves.end() || instruction->tuple_index < 0 ||
          instruction->tuple_index >= static_cast<int64_t>(found->second.size()))
        return nullptr;
      leaves[instruction] = {found->second[static_cast<size_t>(instruction->tuple_index)]};
      continue;
    }
    Member member;
    member.instruction = instruction;
    for (const Instruction* operand : instruction->operands()) {
      const auto found = leaves.find(operand);
      if (found == leaves.end() || found->second.size() != 1) return nullptr;
      const Value& value = plan->values[static_cast<size_t>(found->second[0])];
      const bool scalar = value.home == Home::kOperand && operands[static_cast<size_t>(value.index)].scalar;
      member.operands.push_back(found->second[0]);
      member.operand_views.push_back(ArrayView{nullptr, &operand->shape(), scalar});
    }
    if (opcode == Opcode::kBitcast || opcode == Opcode::kReshape) {  // the same bytes (members write row-major)
      if (member.operands.size() != 1 || plan->values[static_cast<size_t>(member.operands[0])].row_bytes <= 0 ||
          row_bytes(instruction->shape()) != plan->values[static_cast<size_t>(member.operands[0])].row_bytes)
        return nullptr;
      leaves[instruction] = {member.operands[0]};
      continue;
    } else {
      // results: one per array leaf, each over the rows
      std::vector<const Shape*> shapes;
      if (instruction->shape().is_tuple()) {
        for (int64_t i = 0; i < instruction->shape().tuple_size(); ++i) shapes.push_back(&instruction->shape().tuple_shape(i));
      } else {
        shapes.push_back(&instruction->shape());
      }
      for (const Shape* shape : shapes) {
        const int64_t bytes = row_bytes(*shape);
        if (bytes <= 0) return nullptr;
        member.results.push_back(new_value(Value{Home::kScratch, 0, bytes, nullptr}));
        member.result_views.push_back(ArrayView{nullptr, shape, false});
      }
      if (opcode == Opcode::kReduce) {
        if (instruction->operand_count() != 2 || plan->values[static_cast<size_t>(member.operands[0])].row_bytes <= 0)
          return nullptr;
        member.kind = MemberKind::kReduce;
      } else if (opcode == Opcode::kFusion && instruction->fusion_kind == "kLoop" && shapes.size() == 1) {
        member.kind = MemberKind::kLoop;
        SelectedKernel selected = select_fusion(*instruction, member.operand_views, member.result_views);
        const auto* loop = selected ? dynamic_cast<const LoopFusion*>(selected->plan.get()) : nullptr;
        if (loop == nullptr || loop->root < 0 || !loop->outputs.empty()) return nullptr;
        member.row_elements = instruction->shape().element_count() / plan->rows;
        if (loop->row > 0 && member.row_elements % loop->row != 0) return nullptr;  // blocks of whole rows
        member.kernel = std::move(*selected);
      } else if (opcode == Opcode::kFusion && instruction->fusion_kind == "kInput") {
        member.kind = MemberKind::kReduceFusion;
        SelectedKernel selected = select_fusion(*instruction, member.operand_views, member.result_views);
        if (!selected || fusion_kernel::reduce_fusion_chunk_rows(*selected->plan) <= 0) return nullptr;
        member.kernel = std::move(*selected);
      } else {
        return nullptr;
      }
      leaves[instruction] = member.results;
    }
    plan->members.push_back(std::move(member));
  }

  // the outputs: the root's values, written in place (each a different value, none an operand)
  std::vector<const Instruction*> returned;
  if (body.root()->opcode() == Opcode::kTuple) {
    for (const Instruction* operand : body.root()->operands()) returned.push_back(operand);
  } else {
    returned.push_back(body.root());
  }
  if (returned.size() != outputs.size()) return nullptr;
  for (size_t i = 0; i < returned.size(); ++i) {
    const auto found = leaves.find(returned[i]);
    if (found == leaves.end() || found->second.size() != 1) return nullptr;
    Value& value = plan->values[static_cast<size_t>(found->second[0])];
    if (value.home != Home::kScratch || outputs[i].scalar) return nullptr;
    value.home = Home::kOutput;
    value.index = static_cast<int64_t>(i);
  }

  // the chunk: a whole number of every reduce fusion's chunks, else about kChunkElements of the
  // widest value
  int64_t widest = 1;
  for (const Value& value : plan->values) widest = std::max(widest, value.row_bytes / kElementBytes);
  int64_t chunk = 0;
  for (const Member& member : plan->members) {
    if (member.kind != MemberKind::kReduceFusion) continue;
    const int64_t own = fusion_kernel::reduce_fusion_chunk_rows(*member.kernel.plan);
    chunk = chunk == 0 ? own : std::lcm(chunk, own);
  }
  if (chunk == 0) chunk = std::max<int64_t>(16, kChunkElements / widest);
  plan->chunk_rows = std::min(chunk, plan->rows);
  const int64_t tail_rows = plan->rows % plan->chunk_rows == 0 ? plan->chunk_rows : plan->rows % plan->chunk_rows;

  for (Member& member : plan->members) {
    // what the member reads or writes per row, the larger: a reduce's input row, not its one
    // result (two reduces of 8,192-long rows counted 2 elements a row, and the chunks ran on one
    // thread)
    int64_t row_bytes = 0;
    for (int v : member.results) row_bytes = std::max(row_bytes, plan->values[static_cast<size_t>(v)].row_bytes);
    for (int v : member.operands) row_bytes = std::max(row_bytes, plan->values[static_cast<size_t>(v)].row_bytes);
    plan->row_elements += row_bytes / kElementBytes;
    if (member.kind == MemberKind::kReduce) {
      const Instruction& reduce = *member.instruction;
      chunk_shapes(reduce, plan->chunk_rows, member.chunk_input, member.chunk_output);
      chunk_shapes(reduce, tail_rows, member.tail_input, member.tail_output);
      for (int tail = 0; tail < 2; ++tail) {
        ArrayView in[2] = {ArrayView{nullptr, tail ? &member.tail_input : &member.chunk_input, false}, member.operand_views[1]};
        const ArrayView out{nullptr, tail ? &member.tail_output : &member.chunk_output, false};
        SelectedKernel selected = select_reduce(reduce, in, std::span<const ArrayView>(&out, 1));
        if (!selected) return nullptr;
        (tail ? member.tail : member.kernel) = std::move(*selected);
      }
    } else if (member.kind == MemberKind::kLoop) {
      const LoopFusion& loop = static_cast<const LoopFusion&>(*member.kernel.plan);
      auto add = [&](int64_t, int64_t length) {
        for (const auto& piece : member.piece_shapes)
          if (piece.first == length) return;
        std::vector<Shape> shapes;
        for (const fusion_kernel::Node& node : loop.nodes)
          shapes.push_back(Shape::array(node.instruction->shape().element_type(), {length}));
        member.piece_shapes.emplace_back(length, std::move(shapes));
      };
      for_each_piece(loop, 0, plan->chunk_rows * member.row_elements, add);
      for_each_piece(loop, (plan->rows - tail_rows) * member.row_elements, plan->rows * member.row_elements, add);
    }
  }
  // scratch: a chunk's rows of each value between members, 64-byte aligned
  for (Value& value : plan->values) {
    if (value.home != Home::kScratch) continue;
    value.index = plan->scratch_bytes;
    plan->scratch_bytes += (plan->chunk_rows * value.row_bytes + 63) / 64 * 64;
  }
  return plan;
}

}  // namespace

int64_t row_fusion_chunks_per_task(const KernelPlan& plan) {
  const auto* rows = dynamic_cast<const RowFusion*>(&plan);
  return rows != nullptr ? chunks_per_task(*rows) : 0;
}

SelectedKernel select_row_fusion(const Instruction& fusion, std::span<const ArrayView> operands,
                                 std::span<const ArrayView> outputs) {
  if (fusion.opcode() != Opcode::kFusion || fusion.fusion_kind != "kCustom" || fusion.called_computations().size() != 1 ||
      !fusion.fusion_output_to_operand_aliasing.empty() || fusion.called_computations()[0]->root() == nullptr)
    return std::nullopt;
  std::unique_ptr<RowFusion> plan = plan_row_fusion(fusion, operands, outputs);
  if (plan == nullptr) return std::nullopt;
  return NativeKernel{&row_fusion_kernel, std::move(plan)};
}

}  // namespace insitu
