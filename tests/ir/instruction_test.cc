// Operand and user lists (ir/instruction.h): every user once, whatever the operand count; a value
// read by many instructions keeps its list right through adds, operand swaps and removals (past
// kIndexedUsers the list is indexed, and a removed user's slot takes the last user).
#include "insitu/ir/instruction.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "insitu/ir/computation.h"
#include "insitu/support/str.h"

namespace insitu {
namespace {

Instruction* add_parameter(Computation& computation, int64_t number) {
  auto parameter = std::make_unique<Instruction>(Opcode::kParameter, str_cat("p", number),
                                                 Shape::array(PrimitiveType::kF32, {4}));
  parameter->parameter_number = number;
  return computation.add_instruction(std::move(parameter));
}

Instruction* add_sum(Computation& computation, const std::string& name, Instruction* a, Instruction* b) {
  auto sum = std::make_unique<Instruction>(Opcode::kAdd, name, Shape::array(PrimitiveType::kF32, {4}));
  sum->append_operand(a);
  sum->append_operand(b);
  return computation.add_instruction(std::move(sum));
}

bool holds(const std::vector<Instruction*>& list, const Instruction* instruction) {
  return std::find(list.begin(), list.end(), instruction) != list.end();
}

TEST(InstructionTest, AUserReadingAnOperandTwiceIsListedOnce) {
  Computation computation("c");
  Instruction* p = add_parameter(computation, 0);
  Instruction* twice = add_sum(computation, "twice", p, p);
  computation.set_root(twice);
  EXPECT_EQ(p->users(), std::vector<Instruction*>{twice});
  twice->replace_operand(0, add_parameter(computation, 1));
  EXPECT_EQ(p->users(), std::vector<Instruction*>{twice});  // still read through operand 1
}

TEST(InstructionTest, AValueReadByThousandsKeepsItsUsersThroughReplacementsAndRemovals) {
  Computation computation("c");
  Instruction* y = add_parameter(computation, 0);
  Instruction* other = add_parameter(computation, 1);
  std::vector<Instruction*> sums;
  Instruction* x = add_parameter(computation, 2);
  for (int i = 0; i < 2000; ++i) {
    x = add_sum(computation, str_cat("s", i), x, y);
    x->append_operand(y);  // a repeated operand adds no second entry
    sums.push_back(x);
  }
  computation.set_root(x);
  ASSERT_EQ(y->users().size(), sums.size());
  EXPECT_EQ(y->users(), sums);  // in the order they became users while nothing was removed

  // Every other sum reads `other` instead: gone from y's list, each exactly once in other's.
  for (size_t i = 0; i < sums.size(); i += 2) sums[i]->replace_operand(1, other), sums[i]->replace_operand(2, other);
  EXPECT_EQ(y->users().size(), sums.size() / 2);
  EXPECT_EQ(other->users().size(), sums.size() / 2);
  for (size_t i = 0; i < sums.size(); ++i) {
    EXPECT_EQ(holds(y->users(), sums[i]), i % 2 == 1) << i;
    EXPECT_EQ(holds(other->users(), sums[i]), i % 2 == 0) << i;
  }

  // Removing the chain from its end leaves y's list empty, through the indexed and the plain list.
  computation.set_root(sums.front());
  for (size_t i = sums.size(); i-- > 1;) {
    computation.remove_instructions({sums[i]});
    EXPECT_EQ(y->users().size() + other->users().size(), i) << i;
  }
  EXPECT_TRUE(y->users().empty());
  EXPECT_EQ(other->users(), std::vector<Instruction*>{sums.front()});
}

std::vector<std::string> names(const Computation& computation) {
  std::vector<std::string> out;
  for (const Instruction* instruction : computation.instructions()) out.push_back(instruction->name());
  return out;
}

// The instruction list (each instruction holds its own position): inserting before one, removing
// some, reordering, each keeping the others' order.
TEST(InstructionTest, ComputationOrderThroughInsertsRemovalsAndReordering) {
  Computation computation("c");
  Instruction* p0 = add_parameter(computation, 0);
  Instruction* p1 = add_parameter(computation, 1);
  Instruction* a = add_sum(computation, "a", p0, p1);
  Instruction* b = add_sum(computation, "b", a, p1);
  computation.set_root(b);
  auto made = std::make_unique<Instruction>(Opcode::kAdd, "m", Shape::array(PrimitiveType::kF32, {4}));
  made->append_operand(p0);
  made->append_operand(p0);
  Instruction* m = computation.insert_instruction_before(std::move(made), a);
  EXPECT_EQ(names(computation), (std::vector<std::string>{"p0", "p1", "m", "a", "b"}));
  computation.set_instruction_order({p1, p0, m, a, b});
  EXPECT_EQ(names(computation), (std::vector<std::string>{"p1", "p0", "m", "a", "b"}));
  computation.remove_instructions({m, m});  // listed twice: removed once
  EXPECT_EQ(names(computation), (std::vector<std::string>{"p1", "p0", "a", "b"}));
  EXPECT_EQ(p0->users(), std::vector<Instruction*>{a});
  EXPECT_EQ(computation.instruction_count(), 4);
  EXPECT_EQ(computation.find_instruction("a"), a);
}

Instruction* add_copy(Computation& computation, const std::string& name, Instruction* of) {
  auto copy = std::make_unique<Instruction>(Opcode::kCopy, name, Shape::array(PrimitiveType::kF32, {4}));
  copy->append_operand(of);
  return computation.add_instruction(std::move(copy));
}

// A trial removal (copy elimination's, on the module itself): undone, everything is as it was,
// each user list in its order and the order in which later removals would reshuffle it (the
// index past kIndexedUsers); kept, the readers read the operand and the copy is gone.
TEST(InstructionTest, AForwardTrialUndoneLeavesEverythingAsItWas) {
  Computation computation("c");
  Instruction* p = add_parameter(computation, 0);
  Instruction* q = add_parameter(computation, 1);
  Instruction* before = add_sum(computation, "before", p, q);  // p's first user
  Instruction* copy = add_copy(computation, "copy", p);
  Instruction* both = add_sum(computation, "both", copy, p);  // reads the copy and its operand
  Instruction* twice = add_sum(computation, "twice", copy, copy);
  std::vector<Instruction*> many;
  for (int i = 0; i < 40; ++i) many.push_back(add_sum(computation, str_cat("r", i), q, copy));
  Instruction* second = add_copy(computation, "second", twice);
  computation.set_root(second);
  const std::vector<std::string> order = names(computation);
  const std::vector<Instruction*> p_users = p->users(), copy_users = copy->users(), twice_users = twice->users();
  ASSERT_GT(copy_users.size(), Instruction::kIndexedUsers);

  {
    ForwardTrial first(copy);
    ForwardTrial root(second);  // the root: the computation returns `twice` meanwhile
    EXPECT_EQ(computation.root(), twice);
    EXPECT_EQ(both->operands(), (std::vector<Instruction*>{p, p}));
    EXPECT_EQ(twice->operands(), (std::vector<Instruction*>{p, p}));
    EXPECT_EQ(computation.instruction_count(), static_cast<int64_t>(order.size()) - 2);
    EXPECT_TRUE(holds(p->users(), many[7]));
    root.undo();  // the last first (leaving scope would do both)
    first.undo();
  }
  EXPECT_EQ(names(computation), order);
  EXPECT_EQ(computation.root(), second);
  EXPECT_EQ(p->users(), p_users);
  EXPECT_EQ(copy->users(), copy_users);
  EXPECT_EQ(twice->users(), twice_users);
  EXPECT_EQ(both->operands(), (std::vector<Instruction*>{copy, p}));
  EXPECT_EQ(twice->operands(), (std::vector<Instruction*>{copy, copy}));
  // The index came back: removing a middle user moves the last into its place, as before.
  computation.remove_instruction(many[3]);
  EXPECT_EQ(copy->users()[std::find(copy_users.begin(), copy_users.end(), many[3]) - copy_users.begin()], many.back());

  ForwardTrial kept(copy);
  kept.keep();
  EXPECT_EQ(computation.find_instruction("copy"), nullptr);
  EXPECT_EQ(twice->operands(), (std::vector<Instruction*>{p, p}));
  EXPECT_EQ(p->users().front(), before);
  EXPECT_TRUE(holds(p->users(), many[7]) && holds(p->users(), twice) && holds(p->users(), both));
}

}  // namespace
}  // namespace insitu
