// Collectives in the evaluator and multi-device runs (collectives.h). Their attributes are read
// in collective_groups.cc, the communicators are communicator.cc.
#include "insitu/evaluator/collectives.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "insitu/evaluator/apply_util.h"
#include "insitu/evaluator/ops.h"
#include "insitu/ir/computation.h"
#include "insitu/ir/module.h"
#include "insitu/support/str.h"

namespace insitu {

using eval::bad_instruction;
using eval::ComputationRunner;
using eval::find_own_attribute;
using eval::own_bool_attribute;

// --- the collective instructions ----------------------------------------------------------------

namespace {

// Piece `k` of `count` equal pieces of `value` along `dimension`.
Literal piece(const Literal& value, int64_t dimension, int64_t count, int64_t k) {
  const Shape& shape = value.shape();
  std::vector<int64_t> dims = shape.dimensions();
  const int64_t width = byte_width(shape.element_type());
  int64_t outer = 1, inner = width;
  for (int64_t d = 0; d < dimension; ++d) outer *= dims[d];
  for (int64_t d = dimension + 1; d < static_cast<int64_t>(dims.size()); ++d) inner *= dims[d];
  const int64_t size = dims[dimension] / count;
  dims[dimension] = size;
  Literal out(Shape::array(shape.element_type(), dims));
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out.untyped_data() + o * size * inner,
                value.untyped_data() + (o * dims[dimension] * count + k * size) * inner, static_cast<size_t>(size * inner));
  return out;
}

// `values` joined along `dimension` (equal shapes but there).
Literal join(const std::vector<Literal>& values, int64_t dimension) {
  const Shape& shape = values.front().shape();
  std::vector<int64_t> dims = shape.dimensions();
  const int64_t width = byte_width(shape.element_type());
  int64_t outer = 1, inner = width;
  for (int64_t d = 0; d < dimension; ++d) outer *= dims[d];
  for (int64_t d = dimension + 1; d < static_cast<int64_t>(dims.size()); ++d) inner *= dims[d];
  const int64_t size = dims[dimension];
  dims[dimension] = size * static_cast<int64_t>(values.size());
  Literal out(Shape::array(shape.element_type(), dims));
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < values.size(); ++k)
      std::memcpy(out.untyped_data() + (o * dims[dimension] + static_cast<int64_t>(k) * size) * inner,
                  values[k].untyped_data() + o * size * inner, static_cast<size_t>(size * inner));
  return out;
}

// to_apply folded over `values` element by element, in order.
StatusOr<Literal> fold(const Instruction& instruction, const std::vector<Literal>& values, ComputationRunner& runner) {
  Literal acc = values.front();
  const PrimitiveType type = acc.shape().element_type();
  const int64_t width = byte_width(type);
  Literal a(Shape::scalar(type)), b(Shape::scalar(type));
  const Literal* arguments[] = {&a, &b};
  for (size_t k = 1; k < values.size(); ++k) {
    for (int64_t e = 0; e < acc.element_count(); ++e) {
      std::memcpy(a.untyped_data(), acc.untyped_data() + e * width, width);
      std::memcpy(b.untyped_data(), values[k].untyped_data() + e * width, width);
      INSITU_ASSIGN_OR_RETURN(Literal r, runner.run(*instruction.to_apply(), arguments));
      if (!(r.shape() == Shape::scalar(type)))
        return bad_instruction(instruction, str_cat("to_apply must return one ", primitive_type_name(type), " scalar"));
      std::memcpy(acc.untyped_data() + e * width, r.untyped_data(), width);
    }
  }
  return acc;
}

StatusOr<int64_t> one_dimension(const Instruction& instruction, const Literal& operand) {
  return collective_dimension(instruction, operand.shape());
}

}  // namespace

bool is_collective_opcode(Opcode opcode) { return op_family(opcode) == OpFamily::kCollective; }

StatusOr<Literal> evaluate_collective(const Instruction& instruction, std::span<const Literal* const> operands,
                                      const DeviceContext* device, ComputationRunner& runner) {
  // The async pairs: -start does the work and holds (operands, result, contexts...); -done
  // forwards its result.
  if (instruction.opcode() == Opcode::kAllGatherDone || instruction.opcode() == Opcode::kCollectivePermuteDone) {
    if (operands.size() != 1 || !operands[0]->shape().is_tuple() || operands[0]->shape().tuple_size() < 2)
      return bad_instruction(instruction, "takes the tuple its -start made");
    return operands[0]->element(1);
  }
  const bool start = instruction.opcode() == Opcode::kAllGatherStart || instruction.opcode() == Opcode::kCollectivePermuteStart;
  const Opcode opcode = instruction.opcode() == Opcode::kAllGatherStart          ? Opcode::kAllGather
                        : instruction.opcode() == Opcode::kCollectivePermuteStart ? Opcode::kCollectivePermute
                                                                                  : instruction.opcode();
  const bool start_shaped = instruction.shape().is_tuple() && instruction.shape().tuple_size() >= 2;
  // The shape the collective itself produces: a -start's element 1.
  const Shape& result_shape = start && start_shaped ? instruction.shape().tuple_shapes()[1] : instruction.shape();
  DeviceContext alone;  // no context: this device alone, in the grid its module says
  if (device == nullptr) {
    if (instruction.parent() != nullptr && instruction.parent()->parent() != nullptr)
      alone.grid = device_grid(*instruction.parent()->parent());
    device = &alone;
  }
  if (opcode == Opcode::kReplicaId) return Literal::scalar<uint32_t>(static_cast<uint32_t>(device->replica()));
  if (opcode == Opcode::kPartitionId) return Literal::scalar<uint32_t>(static_cast<uint32_t>(device->partition()));
  if (opcode == Opcode::kAllReduceDone) return *operands[0];  // all-reduce-start did the work
  // Every attribute kept for a collective is read here, or refused (never ignored).
  for (const RawAttribute& attribute : instruction.extra_attributes) {
    static const char* const kRead[] = {"replica_groups",      "channel_id",       "use_global_device_ids",
                                        "dimensions",          "source_target_pairs", "constrain_layout",
                                        "has_dynamic_root"};
    if (std::find(std::begin(kRead), std::end(kRead), attribute.key) == std::end(kRead))
      return bad_instruction(instruction, str_cat(attribute.key, "=", attribute.value, " is not supported yet"));
  }
  // collective-broadcast from a root its second operand names at run time: not supported yet.
  INSITU_ASSIGN_OR_RETURN(const bool dynamic_root, own_bool_attribute(instruction, "has_dynamic_root", false));
  if (dynamic_root) return bad_instruction(instruction, "has_dynamic_root=true is not supported yet");
  if (device->communicator == nullptr && device->grid.devices() > 1)
    return bad_instruction(instruction, str_cat("the module runs on ", device->grid.devices(),
                                                " devices: run every device (insitu run does) for its collectives"));
  INSITU_ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> groups, collective_device_groups(instruction, device->grid));
  const std::vector<int64_t>* mine = nullptr;
  for (const std::vector<int64_t>& group : groups)
    if (std::find(group.begin(), group.end(), device->device) != group.end()) mine = &group;
  std::vector<int64_t> self{device->device};
  if (opcode != Opcode::kCollectivePermute && mine == nullptr)
    return bad_instruction(instruction, str_cat("device ", device->device, " is in none of its replica_groups"));
  const std::vector<int64_t>& group = mine != nullptr ? *mine : self;
  const int64_t size = static_cast<int64_t>(group.size());
  const int64_t position = std::find(group.begin(), group.end(), device->device) - group.begin();
  const std::string what = str_cat(opcode_name(opcode), " %", instruction.name());
  if (operands.empty()) return bad_instruction(instruction, "needs at least one operand");
  for (const Literal* operand : operands)
    if (!operand->shape().is_array()) return bad_instruction(instruction, "takes arrays, not tuples or tokens");
  const bool reduces = opcode == Opcode::kAllReduce || opcode == Opcode::kAllReduceStart || opcode == Opcode::kReduceScatter;
  if (find_own_attribute(instruction, "dimensions") != nullptr)  // read (and checked) before any exchange
    for (const Literal* operand : operands) INSITU_RETURN_IF_ERROR(one_dimension(instruction, *operand).status());
  if (reduces && instruction.called_computations().empty()) return bad_instruction(instruction, "needs to_apply");

  // Every member's operands, in group order: one exchange of a tuple of them.
  auto gather = [&](std::span<const int64_t> members) -> StatusOr<std::vector<Literal>> {
    std::vector<Literal> mine_values;
    for (const Literal* operand : operands) mine_values.push_back(*operand);
    Literal bundle = Literal::tuple(std::move(mine_values));
    if (members.size() == 1) return std::vector<Literal>{std::move(bundle)};
    return device->communicator->exchange(device->device, members, std::move(bundle), what);
  };
  auto results = [&](std::vector<Literal> values) -> Literal {
    return result_shape.is_tuple() ? Literal::tuple(std::move(values)) : std::move(values.front());
  };

  auto compute = [&]() -> StatusOr<Literal> {
  switch (opcode) {
    case Opcode::kAllReduce:
    case Opcode::kAllReduceStart:
    case Opcode::kReduceScatter: {
      INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, gather(group));
      std::vector<Literal> out;
      for (size_t i = 0; i < operands.size(); ++i) {
        std::vector<Literal> values;
        for (Literal& member : all) values.push_back(member.element(static_cast<int64_t>(i)));
        INSITU_ASSIGN_OR_RETURN(Literal reduced, fold(instruction, values, runner));
        if (opcode == Opcode::kReduceScatter) {
          INSITU_ASSIGN_OR_RETURN(int64_t dimension, one_dimension(instruction, reduced));
          if (reduced.shape().dimension(dimension) % size != 0)
            return bad_instruction(instruction, str_cat("dimension ", dimension, " (", reduced.shape().dimension(dimension),
                                                        ") does not split into ", size, " pieces"));
          reduced = piece(reduced, dimension, size, position);
        }
        out.push_back(std::move(reduced));
      }
      return results(std::move(out));
    }
    case Opcode::kAllGather: {
      INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, gather(group));
      std::vector<Literal> out;
      for (size_t i = 0; i < operands.size(); ++i) {
        INSITU_ASSIGN_OR_RETURN(int64_t dimension, one_dimension(instruction, *operands[i]));
        std::vector<Literal> values;
        for (Literal& member : all) values.push_back(member.element(static_cast<int64_t>(i)));
        out.push_back(join(values, dimension));
      }
      return results(std::move(out));
    }
    case Opcode::kAllToAll: {
      INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, gather(group));
      if (find_own_attribute(instruction, "dimensions") != nullptr) {  // one array, split and joined
        INSITU_ASSIGN_OR_RETURN(int64_t dimension, one_dimension(instruction, *operands[0]));
        if (operands.size() != 1 || operands[0]->shape().dimension(dimension) % size != 0)
          return bad_instruction(instruction, str_cat("needs one operand whose dimension ", dimension, " splits into ",
                                                      size, " pieces"));
        std::vector<Literal> pieces;
        for (Literal& member : all) pieces.push_back(piece(member.element(0), dimension, size, position));
        return join(pieces, dimension);
      }
      if (static_cast<int64_t>(operands.size()) != size)  // tuple form: operand j goes to member j
        return bad_instruction(instruction, str_cat("has ", operands.size(), " operands for a group of ", size));
      std::vector<Literal> out;
      for (Literal& member : all) out.push_back(member.element(position));
      return results(std::move(out));
    }
    case Opcode::kCollectiveBroadcast: {
      INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, gather(group));
      std::vector<Literal> out;
      for (size_t i = 0; i < operands.size(); ++i) out.push_back(all.front().element(static_cast<int64_t>(i)));
      return results(std::move(out));
    }
    case Opcode::kCollectivePermute: {
      // The exchange runs over every device the pairs can name from here.
      INSITU_ASSIGN_OR_RETURN(PermuteRoute route, collective_permute_route(instruction, *device));
      // (The in-place form, four operands with slice_sizes, is refused above: slice_sizes is not
      // read.) Several operands are a combined permute: each moves by the same pairs.
      INSITU_ASSIGN_OR_RETURN(std::vector<Literal> all, gather(route.domain));
      std::vector<Literal> out;
      for (size_t i = 0; i < operands.size(); ++i) {
        out.emplace_back(operands[i]->shape());  // XLA: a device no pair targets gets zeros
        for (size_t k = 0; k < route.domain.size(); ++k)
          if (route.domain[k] == route.source) out.back() = all[k].element(static_cast<int64_t>(i));
      }
      return results(std::move(out));
    }
    default: break;
  }
  return bad_instruction(instruction, "is not a collective insitu runs");
  };
  INSITU_ASSIGN_OR_RETURN(Literal result, compute());
  // The group's size decides the result's: a shape written for another device count is the
  // module's error (all-gather of f32[128,32] to f32[128,128] in a one-replica module).
  if (!result.shape().compatible(result_shape))
    return bad_instruction(instruction, str_cat("over a group of ", size, " device(s) the result is ",
                                                result.shape().to_string(false), ", not the written ",
                                                result_shape.to_string(false), "; the module runs ",
                                                device->grid.replicas, " replica(s) x ", device->grid.partitions,
                                                " partition(s): make replica_groups or the shape agree"));
  if (!start) return result;
  if (!start_shaped) return bad_instruction(instruction, "must have a tuple shape (operands, result, ...)");
  // (operands, result, contexts...): the operands as the shape holds them (one array or a tuple),
  // the contexts (u32 scalars) zero.
  const Shape& shape = instruction.shape();
  std::vector<Literal> parts;
  if (shape.tuple_shapes()[0].is_tuple()) {
    std::vector<Literal> inputs;
    for (const Literal* operand : operands) inputs.push_back(*operand);
    parts.push_back(Literal::tuple(std::move(inputs)));
  } else {
    parts.push_back(*operands[0]);
  }
  parts.push_back(std::move(result));
  for (size_t i = 2; i < shape.tuple_shapes().size(); ++i) parts.push_back(Literal(shape.tuple_shapes()[i]));
  return Literal::tuple(std::move(parts));
}

// --- multi-device runs ------------------------------------------------------------------------------

StatusOr<std::vector<Literal>> evaluate_devices(const Module& module, std::span<const std::vector<Literal>> arguments,
                                                const EvaluatorOptions& options, double timeout_seconds) {
  const DeviceGrid grid = device_grid(module);
  if (static_cast<int64_t>(arguments.size()) != grid.devices())
    return invalid_argument(str_cat("module ", module.name(), " runs on ", grid.devices(), " device(s) (", grid.replicas,
                                    " replica(s) x ", grid.partitions, " partition(s)); got arguments for ",
                                    arguments.size()));
  return run_on_device_threads(grid, timeout_seconds, [&](DeviceContext& context) {
    EvaluatorOptions mine = options;
    mine.device = &context;
    return evaluate_module(module, arguments[context.device], mine);
  });
}

StatusOr<std::vector<Literal>> run_on_device_threads(const DeviceGrid& grid, double timeout_seconds,
                                                     const std::function<StatusOr<Literal>(DeviceContext&)>& run,
                                                     bool name_device) {
  InProcessCommunicator communicator(timeout_seconds);
  std::vector<std::optional<StatusOr<Literal>>> results(static_cast<size_t>(grid.devices()));
  std::mutex first_mutex;
  std::optional<Status> first_failure;
  std::vector<std::thread> threads;
  for (int64_t d = 0; d < grid.devices(); ++d) {
    threads.emplace_back([&, d] {
      DeviceContext context{&communicator, grid, d};
      StatusOr<Literal> result = run(context);
      if (!result.ok()) {
        {
          std::lock_guard<std::mutex> lock(first_mutex);
          if (!first_failure)
            first_failure = name_device ? result.status().with_context(str_cat("device ", d)) : result.status();
        }
        communicator.abort(d, result.status());
      }
      results[static_cast<size_t>(d)] = std::move(result);
    });
  }
  for (std::thread& thread : threads) thread.join();
  if (first_failure) return *first_failure;
  std::vector<Literal> values;
  for (auto& result : results) values.push_back(std::move(*result).value());
  return values;
}

}  // namespace insitu
